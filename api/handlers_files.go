package api

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/gin-gonic/gin"
)

// filePath returns the cleaned relative path of a files route, or answers
// 400 for an empty, absolute-escaping or ".." path. The sandbox checks the
// path again; this only refuses the obviously wrong early.
func filePath(c *gin.Context) (string, bool) {
	p := strings.TrimPrefix(c.Param("path"), "/")
	bad := p == "" || strings.ContainsRune(p, 0) || strings.HasSuffix(p, "/")
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			bad = true
		}
	}
	if bad {
		abortError(c, newError(core.ErrInvalid, "file path must be relative, without empty, '.' or '..' segments"))
		return "", false
	}
	return path.Clean(p), true
}

// putFile answers PUT /v1/sessions/{id}/files/{path}: the raw body becomes
// the file. 200 with {"path", "size"}.
func (s *Server) putFile(c *gin.Context) {
	if !s.needSessions(c) {
		return
	}
	rec, ok := s.ownedSession(c, true)
	if !ok {
		return
	}
	p, ok := filePath(c)
	if !ok {
		return
	}
	data, err := io.ReadAll(c.Request.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if !errors.As(err, &mbe) {
			err = newError(core.ErrInvalid, "could not read the upload")
		}
		fail(c, err)
		return
	}
	if err := s.deps.Sessions.PutFile(c.Request.Context(), rec.Owner, rec.ID, p, data); err != nil {
		s.forgetLost(rec.ID, err)
		s.logPlatform("put file", rec.Owner, err)
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"path": p, "size": len(data)})
}

// getFile answers GET /v1/sessions/{id}/files/{path} with the bytes.
func (s *Server) getFile(c *gin.Context) {
	if !s.needSessions(c) {
		return
	}
	rec, ok := s.ownedSession(c, true)
	if !ok {
		return
	}
	p, ok := filePath(c)
	if !ok {
		return
	}
	data, err := s.deps.Sessions.GetFile(c.Request.Context(), rec.Owner, rec.ID, p)
	if err != nil {
		s.forgetLost(rec.ID, err)
		s.logPlatform("get file", rec.Owner, err)
		fail(c, err)
		return
	}
	sendBytes(c, path.Base(p), "application/octet-stream", data, false)
}

// forgetLost drops the session record when the backend no longer knows it.
func (s *Server) forgetLost(id string, err error) {
	if errors.Is(err, core.ErrNotFound) {
		s.sessions.remove(id)
	}
}

// sendBytes writes user-produced bytes safely: no sniffing, a sandboxing
// CSP so HTML cannot run on this origin, and inline only for raster images.
func sendBytes(c *gin.Context, name, mimeType string, data []byte, inlineImages bool) {
	h := c.Writer.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	h.Set("Cache-Control", "private, max-age=300")
	disp := "attachment"
	if inlineImages && safeInline(mimeType) {
		disp = "inline"
	} else if !inlineImages {
		mimeType = "application/octet-stream"
	}
	h.Set("Content-Disposition", mime.FormatMediaType(disp, map[string]string{"filename": name}))
	c.Data(http.StatusOK, mimeType, data)
}

// safeInline lists the artifact types shown inline; everything else
// (SVG and HTML included, which can carry script) is an attachment.
func safeInline(m string) bool {
	switch m {
	case "image/png", "image/jpeg", "image/gif", "image/webp", "text/plain", "text/csv", "application/json":
		return true
	}
	return false
}
