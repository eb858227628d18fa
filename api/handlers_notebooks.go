package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/wire"
)

// getNotebook answers GET /v1/sessions/{id}/notebook: the saved cells and
// their version, 404 when none were saved.
func (s *Server) getNotebook(c *gin.Context) {
	if rec, ok := s.ownedSession(c, false, false); ok {
		nb, err := s.notebooks.Get(c.Request.Context(), rec.Owner, rec.ID)
		s.reply(c, "get notebook", http.StatusOK, nb, err)
	}
}

// putNotebook answers PUT /v1/sessions/{id}/notebook: it saves the cells
// when the body's version is the saved one (0 or absent for the first
// save) and answers the new version; another version is a 409 naming the
// current one.
func (s *Server) putNotebook(c *gin.Context) {
	rec, ok := s.ownedSession(c, false, false)
	if !ok {
		return
	}
	var req wire.NotebookSave
	if err := decodeJSON(c, &req, false); err != nil {
		fail(c, err)
		return
	}
	var version int64
	if req.Version != nil {
		version = *req.Version
	}
	saved, err := s.notebooks.Save(c.Request.Context(), rec.Owner, rec.ID, req.Cells, version)
	s.reply(c, "put notebook", http.StatusOK, saved, err)
}
