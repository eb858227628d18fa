package api

import (
	"cmp"

	"github.com/gin-gonic/gin"
)

// artifact answers GET /v1/artifacts/{artifact} (session false: an
// artifact of a one-shot call) or GET /v1/sessions/{id}/artifacts/{artifact}
// (which works after the session closed): the owner's artifact until it
// expires, else 404.
func (s *Server) artifact(session bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		sid := ""
		if session {
			sid = c.Param("id")
		}
		a, err := s.artifacts.Get(c.Request.Context(), owner(c), sid, c.Param("artifact"))
		if err != nil {
			s.logPlatform("get artifact", owner(c), err)
			fail(c, err)
			return
		}
		sendBytes(c, a.Name, cmp.Or(a.MIME, "application/octet-stream"), a.Data, true)
	}
}
