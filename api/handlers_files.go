package api

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/wire"
	"github.com/gin-gonic/gin"
)

// sessionFile returns the caller's session record and the cleaned
// relative path of a files route, or answers 404 for the session, 400 for
// an empty, absolute-escaping or ".." path. The sandbox checks the path
// again; this only refuses the obviously wrong early.
func (s *Server) sessionFile(c *gin.Context) (sessionrecords.Record, string, bool) {
	rec, ok := s.ownedSession(c, true, true)
	if !ok {
		return rec, "", false
	}
	p := strings.TrimPrefix(c.Param("path"), "/")
	bad := p == "" || strings.ContainsRune(p, 0) || strings.HasSuffix(p, "/")
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." || seg == "." || seg == "" {
			bad = true
		}
	}
	if bad {
		abortError(c, newError(core.ErrInvalid, "file path must be relative, without empty, '.' or '..' segments"))
		return rec, "", false
	}
	return rec, path.Clean(p), true
}

// putFile answers PUT /v1/sessions/{id}/files/{path}: the raw body becomes
// the file. 200 with {"path", "size"}. A body whose Content-Length is over
// Config.MaxUploadBytes is refused with 413 before it is read (limitBody);
// a body of unknown length streams to the worker in chunks and is cut with
// 413 when it passes the cap (the partial file is truncated). Concurrent
// uploads are bounded per key and in total (429).
func (s *Server) putFile(c *gin.Context) {
	rec, p, ok := s.sessionFile(c)
	if !ok {
		return
	}
	if e := s.uploads.acquire(rec.Owner); e != nil {
		abortError(c, e)
		return
	}
	defer s.uploads.release(rec.Owner)
	n, err := s.sessions.PutFile(c.Request.Context(), rec, p, c.Request.Body)
	var mbe *http.MaxBytesError
	if err != nil && !errors.As(err, &mbe) && isReadError(err) {
		err = newError(core.ErrInvalid, "could not read the upload")
	}
	s.reply(c, "put file", http.StatusOK, wire.FileWritten{Path: p, Size: n}, err)
}

// isReadError reports an error from reading the request body rather than
// from the backend: it carries no core.Code.
func isReadError(err error) bool {
	var ce *core.Error
	var code core.Code
	return !errors.As(err, &ce) && !errors.As(err, &code) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled)
}

// getFile answers GET /v1/sessions/{id}/files/{path} with the bytes,
// streamed from the worker in chunks.
func (s *Server) getFile(c *gin.Context) {
	rec, p, ok := s.sessionFile(c)
	if !ok {
		return
	}
	started := false
	_, err := s.sessions.GetFile(c.Request.Context(), rec, p, func(size int64) io.Writer {
		started = true
		setDownloadHeaders(c, path.Base(p), "application/octet-stream", false)
		c.Header("Content-Length", strconv.FormatInt(size, 10))
		c.Status(http.StatusOK)
		c.Writer.WriteHeaderNow()
		return c.Writer
	})
	if err == nil {
		return
	}
	s.logPlatform("get file", rec.Owner, err)
	if !started {
		fail(c, err)
		return
	}
	// The status is sent: cut the connection so the client sees a short body.
	s.log.Warn("api: download cut short", "owner", rec.Owner, "err", err)
	panic(http.ErrAbortHandler)
}

// listFiles answers GET /v1/sessions/{id}/files[?path=DIR]: every file
// under the folder (default the work folder), walked breadth first within
// bounds (sessions.Service.ListFiles).
func (s *Server) listFiles(c *gin.Context) {
	if rec, ok := s.ownedSession(c, true, true); ok {
		list, err := s.sessions.ListFiles(c.Request.Context(), rec, c.Query("path"))
		s.reply(c, "list files", http.StatusOK, list, err)
	}
}

// sendBytes writes user-produced bytes safely: no sniffing, a sandboxing
// CSP so HTML cannot run on this origin, and inline only for raster images.
func sendBytes(c *gin.Context, name, mimeType string, data []byte, inlineImages bool) {
	mimeType = setDownloadHeaders(c, name, mimeType, inlineImages)
	c.Data(http.StatusOK, mimeType, data)
}

// setDownloadHeaders sets the headers of sendBytes and returns the
// Content-Type to send.
func setDownloadHeaders(c *gin.Context, name, mimeType string, inlineImages bool) string {
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
	h.Set("Content-Type", mimeType)
	return mimeType
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
