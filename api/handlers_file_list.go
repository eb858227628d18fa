package api

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/wire"
	"github.com/gin-gonic/gin"
)

// Bounds of one file listing: how many files and how deep it walks.
const (
	listMaxFiles = 2000
	listMaxDepth = 8
)

// listFiles answers GET /v1/sessions/{id}/files[?path=DIR]: every file
// under the folder (default the work folder), walked breadth first up to
// listMaxDepth folders deep and listMaxFiles entries, as
// {"path", "files": [{path, type, size, mtime}], "truncated"}. Folders
// are listed too (type "dir"); hidden entries (a leading ".") are left out.
func (s *Server) listFiles(c *gin.Context) {
	if !s.needSessions(c) {
		return
	}
	rec, ok := s.ownedSession(c, true)
	if !ok {
		return
	}
	root := strings.Trim(c.Query("path"), "/")
	if root != "" {
		for _, seg := range strings.Split(root, "/") {
			if seg == ".." || seg == "." || seg == "" || strings.ContainsRune(seg, 0) {
				abortError(c, newError(core.ErrInvalid, "query parameter path must be a relative folder, without empty, '.' or '..' segments"))
				return
			}
		}
	}
	type dir struct {
		path  string
		depth int
	}
	files := []wire.FileInfo{}
	truncated := false
	queue := []dir{{root, 0}}
	full := false // listMaxFiles reached; a folder too deep only marks truncated
	for len(queue) > 0 && !full {
		d := queue[0]
		queue = queue[1:]
		entries, err := s.deps.Sessions.ListFiles(c.Request.Context(), rec.Owner, rec.ID, d.path)
		if err != nil && d.path == root && root != "" && core.CodeOf(err) == core.ErrInvalid {
			err = s.whyNoFolder(c.Request.Context(), rec, root, err)
		}
		if err != nil {
			s.forgetLost(c.Request.Context(), rec, err)
			s.logPlatform("list files", rec.Owner, err)
			fail(c, err)
			return
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name, ".") {
				continue
			}
			if len(files) == listMaxFiles {
				truncated, full = true, true
				break
			}
			p := path.Join(d.path, e.Name)
			files = append(files, wire.FileInfo{Path: p, Type: e.Type, Size: e.Size, MTime: e.MTime})
			if e.Type == "dir" {
				if d.depth+1 < listMaxDepth {
					queue = append(queue, dir{p, d.depth + 1})
				} else {
					truncated = true
				}
			}
		}
	}
	c.JSON(http.StatusOK, wire.FileList{Path: root, Files: files, Truncated: truncated})
}

// whyNoFolder explains a refused listing of folder root: it walks root's
// segments from the work folder and answers not_found naming root when a
// segment is missing, bad_request when one is a file, and err otherwise
// (the sandbox refuses a missing folder and a malformed one alike).
func (s *Server) whyNoFolder(ctx context.Context, rec sessionrecords.Record, root string, err error) error {
	parent := ""
	for _, seg := range strings.Split(root, "/") {
		entries, lerr := s.deps.Sessions.ListFiles(ctx, rec.Owner, rec.ID, parent)
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
			return newError(core.ErrNotFound, fmt.Sprintf("no folder %q in the work folder (%q does not exist)", root, here))
		case "dir":
		default:
			return newError(core.ErrInvalid, fmt.Sprintf("%q is not a folder (%q is a %s)", root, here, kind))
		}
		parent = here
	}
	return err
}
