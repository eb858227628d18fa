package sessions

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/wire"
)

// Bounds of one walk: how many entries and how many folders deep.
const (
	MaxFiles = 2000
	MaxDepth = 8
)

// list lists one folder (relative to the work folder, "" for it).
type list func(ctx context.Context, folder string) ([]core.FileEntry, error)

// walk lists every entry under root ("" for the work folder; relative,
// without empty, "." or ".." segments, else bad_request), breadth first up
// to MaxDepth folders deep and MaxFiles entries: folders are listed too,
// hidden entries (a leading ".") are left out, and Truncated says a bound
// was met. A root that cannot be listed is not_found or bad_request
// naming the segment at fault; list's other errors are returned as they
// are.
func walk(ctx context.Context, list list, root string) (wire.FileList, error) {
	root = strings.Trim(root, "/")
	if root != "" {
		for _, seg := range strings.Split(root, "/") {
			if seg == ".." || seg == "." || seg == "" || strings.ContainsRune(seg, 0) {
				return wire.FileList{}, core.Errorf("", core.ErrInvalid, "query parameter path must be a relative folder, without empty, '.' or '..' segments")
			}
		}
	}
	type dir struct {
		path  string
		depth int
	}
	out := wire.FileList{Path: root, Files: []wire.FileInfo{}}
	queue := []dir{{root, 0}}
	for len(queue) > 0 {
		d := queue[0]
		queue = queue[1:]
		entries, err := list(ctx, d.path)
		if err != nil && d.path == root && root != "" && core.CodeOf(err) == core.ErrInvalid {
			err = whyNoFolder(ctx, list, root, err)
		}
		if err != nil {
			return wire.FileList{}, err
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name, ".") {
				continue
			}
			if len(out.Files) == MaxFiles {
				out.Truncated = true
				return out, nil
			}
			p := path.Join(d.path, e.Name)
			out.Files = append(out.Files, wire.FileInfo{Path: p, Type: e.Type, Size: e.Size, MTime: e.MTime})
			if e.Type != "dir" {
				continue
			}
			if d.depth+1 < MaxDepth {
				queue = append(queue, dir{p, d.depth + 1})
			} else {
				out.Truncated = true // a folder too deep: the walk goes on
			}
		}
	}
	return out, nil
}

// whyNoFolder explains a refused listing of folder root: it walks root's
// segments from the work folder and answers not_found naming root when a
// segment is missing, bad_request when one is a file, and err otherwise
// (the sandbox refuses a missing folder and a malformed one alike).
func whyNoFolder(ctx context.Context, list list, root string, err error) error {
	parent := ""
	for _, seg := range strings.Split(root, "/") {
		entries, lerr := list(ctx, parent)
		if lerr != nil {
			return err
		}
		kind := ""
		for _, e := range entries {
			if e.Name == seg {
				kind = e.Type
				break
			}
		}
		here := path.Join(parent, seg)
		switch kind {
		case "":
			return core.Errorf("", core.ErrNotFound, fmt.Sprintf("no folder %q in the work folder (%q does not exist)", root, here))
		case "dir":
		default:
			return core.Errorf("", core.ErrInvalid, fmt.Sprintf("%q is not a folder (%q is a %s)", root, here, kind))
		}
		parent = here
	}
	return err
}
