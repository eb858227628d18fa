package api

import (
	"context"
	"net/http"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/filetree"
	"github.com/gin-gonic/gin"
)

// listFiles answers GET /v1/sessions/{id}/files[?path=DIR]: every file
// under the folder (default the work folder), walked as filetree.Walk
// does.
func (s *Server) listFiles(c *gin.Context) {
	if !s.needSessions(c) {
		return
	}
	rec, ok := s.ownedSession(c, true)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	list, err := filetree.Walk(ctx, func(ctx context.Context, folder string) ([]core.FileEntry, error) {
		entries, err := s.deps.Sessions.ListFiles(ctx, rec.Owner, rec.ID, folder)
		s.forgetLost(ctx, rec, err)
		return entries, err
	}, c.Query("path"))
	if err != nil {
		s.logPlatform("list files", rec.Owner, err)
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, list)
}
