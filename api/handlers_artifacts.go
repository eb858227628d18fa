package api

import (
	"cmp"

	"github.com/gin-gonic/gin"
)

// getArtifact answers GET /v1/artifacts/{artifact}: an artifact of a
// one-shot tool call, readable by its owner until it expires.
func (s *Server) getArtifact(c *gin.Context) {
	s.sendArtifact(c, "")
}

// getSessionArtifact answers GET /v1/sessions/{id}/artifacts/{artifact}.
// It still works after the session is closed, until the artifact expires.
func (s *Server) getSessionArtifact(c *gin.Context) {
	s.sendArtifact(c, c.Param("id"))
}

// sendArtifact writes the owner's artifact made in session, or a 404.
func (s *Server) sendArtifact(c *gin.Context, session string) {
	a, err := s.artifacts.Get(c.Request.Context(), owner(c), session, c.Param("artifact"))
	if err != nil {
		s.logPlatform("get artifact", owner(c), err)
		fail(c, err)
		return
	}
	sendBytes(c, a.Name, cmp.Or(a.MIME, "application/octet-stream"), a.Data, true)
}
