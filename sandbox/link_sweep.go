package sandbox

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// linkStale is how old a link's directory must be before a sweep may
// remove it: a live engine removes its link once the controller connected
// or failed to, at most the create's bound (a minute, startBox) plus
// linkBoot after making it; the rest is margin.
const linkStale = time.Minute + linkBoot + 2*time.Minute

// sweepLinks removes the link directories under Config.LinkDir that a
// process killed while its container booted left behind (a live engine
// removes its own): only directories named linkPrefix+id, last changed
// before cutoff (older than linkStale when the containers were listed),
// whose id no container in live carries (LabelLink of every Airlock
// container listed, of any process or worker sharing the folder). The
// engine's private folder (no LinkDir) is its own and is removed on Close.
// It returns how many it removed.
func (e *Engine) sweepLinks(live map[string]bool, cutoff time.Time) int {
	dir := e.cfg.LinkDir
	if dir == "" {
		return 0
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, ent := range entries {
		id, ok := strings.CutPrefix(ent.Name(), linkPrefix)
		if !ok || !ent.IsDir() || !isLinkID(id) || live[id] {
			continue
		}
		st, err := os.Lstat(filepath.Join(dir, ent.Name()))
		if err != nil || !st.IsDir() || !st.ModTime().Before(cutoff) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, ent.Name())); err != nil {
			e.log.Warn("reap: stale link folder not removed", "folder", ent.Name(), "err", err)
			continue
		}
		n++
	}
	return n
}

// isLinkID reports whether id is one newID could have made.
func isLinkID(id string) bool {
	b, err := hex.DecodeString(id)
	return err == nil && len(b) == 12
}
