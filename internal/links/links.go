// Package links decides whether a symbolic link inside a folder stays in
// it, the one rule shared by the packers that copy host folders into
// sandboxes (an input folder, a batch item's folder): a link that leads out
// is never copied, as its target could name a host path.
package links

import (
	"path"
	"path/filepath"
	"strings"
)

// maxTarget is the longest link target copied (PATH_MAX less the NUL, the
// bound the sandbox's archive rules apply too).
const maxTarget = 4095

// StaysIn reports whether a link at rel (a slash path inside the folder)
// pointing to target stays inside the folder, read as text: not empty,
// not absolute, no NUL or backslash, not too long, and never above the
// folder's root.
func StaysIn(rel, target string) bool {
	if target == "" || path.IsAbs(target) || len(target) > maxTarget || strings.ContainsAny(target, "\x00\\") {
		return false
	}
	j := path.Clean(path.Join(path.Dir(rel), target))
	return j != ".." && !strings.HasPrefix(j, "../")
}

// ResolvesIn reports whether the link at p, resolved on the host (chains
// of links included), ends inside dir, a resolved folder. A dangling link
// counts as inside: it gives nothing to read.
func ResolvesIn(dir, p string) bool {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return true
	}
	rel, err := filepath.Rel(dir, r)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
