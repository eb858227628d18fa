package api

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/gin-gonic/gin"
)

// webFS is the web UI: plain HTML, CSS and JavaScript, no build step.
//
//go:embed web
var webFS embed.FS

// uiCSP is the content security policy of the UI pages: own scripts and
// styles only; images may be blob: URLs made from fetched artifacts.
const uiCSP = "default-src 'self'; img-src 'self' blob: data:; script-src 'self'; style-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

// uiIndex answers GET / with the single page.
func (s *Server) uiIndex(c *gin.Context) {
	s.sendUIFile(c, "index.html")
}

// uiAsset answers GET /ui/{file} with a script, stylesheet or icon.
func (s *Server) uiAsset(c *gin.Context) {
	s.sendUIFile(c, strings.TrimPrefix(c.Param("file"), "/"))
}

// sendUIFile writes web/name or a 404.
func (s *Server) sendUIFile(c *gin.Context, name string) {
	clean := path.Clean("/" + name)[1:]
	data, err := fs.ReadFile(webFS, "web/"+clean)
	if err != nil || clean == "" {
		abortError(c, newError(core.ErrNotFound, "no such file"))
		return
	}
	ct := mime.TypeByExtension(path.Ext(clean))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h := c.Writer.Header()
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	c.Data(http.StatusOK, ct, data)
}
