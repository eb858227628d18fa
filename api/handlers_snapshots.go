package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/wire"
)

// snapshotRoutes adds the session snapshot routes (issue 30): snapshot,
// the caller's snapshots, fork and the notebook export. Another owner's
// session or snapshot is 404 on every one.
func (s *Server) snapshotRoutes(g *gin.RouterGroup, slow, quick gin.HandlerFunc) {
	g.POST("/sessions/:id/snapshot", slow, s.snapshotSession)
	g.POST("/sessions/:id/fork", slow, s.forkSession)
	g.GET("/sessions/:id/notebook.ipynb", quick, s.exportNotebook)
	g.GET("/snapshots", quick, s.listSnapshots)
	g.GET("/snapshots/:id", quick, s.getSnapshot)
	g.DELETE("/snapshots/:id", quick, s.deleteSnapshot)
}

// snapshotSession answers POST /v1/sessions/{id}/snapshot with 201: the
// snapshot's id, size and the names it could not save.
func (s *Server) snapshotSession(c *gin.Context) {
	if rec, ok := s.ownedSession(c, true, true); ok {
		out, err := s.snapshots.Take(c.Request.Context(), rec)
		s.reply(c, "snapshot session", http.StatusCreated, out, err)
	}
}

// forkSession answers POST /v1/sessions/{id}/fork with 201: a new session
// with the same state, independent afterwards.
func (s *Server) forkSession(c *gin.Context) {
	if rec, ok := s.ownedSession(c, true, true); ok {
		who := owner(c)
		v, err := s.snapshots.Fork(c.Request.Context(), rec, s.calls.Budget(who), s.cfg.DefaultLimits)
		if err == nil {
			v.TimeoutSeconds = s.sessionTimeout(rec.Limits)
		}
		s.reply(c, "fork session", http.StatusCreated, v, err)
	}
}

// openFromSnapshot answers POST /v1/sessions with a "snapshot": 201 and
// the session restored from the caller's snapshot (404 for anyone
// else's), with the snapshot's limits unless the request gives some.
func (s *Server) openFromSnapshot(c *gin.Context, req *wire.CreateSessionRequest) {
	who := owner(c)
	ctx := c.Request.Context()
	wl, background, err := s.snapshots.Limits(ctx, who, req.Snapshot)
	if err == nil && req.Environment != "" {
		err = s.sameEnvironment(ctx, who, req)
	}
	if req.Limits != nil {
		wl = req.Limits
	}
	var limits core.Limits
	if err == nil {
		limits, err = s.calls.SessionLimits(who, wl)
	}
	if err == nil && (background || req.Background) {
		if p := s.calls.Policy(who); p == nil || !p.Background {
			background = false
			if req.Background {
				err = newError(core.ErrInvalid, `"background": true is not allowed for this API key: its policy in the keys file must say background=true`).
					withDetails(map[string]any{"policy": "background"})
			}
		}
	}
	var v wire.Session
	if err == nil {
		v, err = s.snapshots.Open(ctx, who, req.Snapshot, req.Restore, limits, background || req.Background, s.calls.Budget(who), s.cfg.DefaultLimits)
	}
	if err == nil {
		v.TimeoutSeconds = s.sessionTimeout(limits)
	}
	s.reply(c, "open session from snapshot", http.StatusCreated, v, err)
}

// exportNotebook answers GET /v1/sessions/{id}/notebook.ipynb: the
// session's call log with its outputs as an nbformat 4 notebook.
func (s *Server) exportNotebook(c *gin.Context) {
	rec, ok := s.ownedSession(c, false, false)
	if !ok {
		return
	}
	b, err := s.snapshots.Notebook(c.Request.Context(), rec)
	if err != nil {
		s.reply(c, "export notebook", http.StatusOK, nil, err)
		return
	}
	c.Header("Content-Disposition", `attachment; filename="`+rec.ID+`.ipynb"`)
	c.Data(http.StatusOK, "application/x-ipynb+json", b)
}

// listSnapshots answers GET /v1/snapshots: the caller's snapshots.
func (s *Server) listSnapshots(c *gin.Context) {
	out, err := s.snapshots.List(c.Request.Context(), owner(c))
	s.reply(c, "list snapshots", http.StatusOK, out, err)
}

// getSnapshot answers GET /v1/snapshots/{id}.
func (s *Server) getSnapshot(c *gin.Context) {
	out, err := s.snapshots.Get(c.Request.Context(), owner(c), c.Param("id"))
	s.reply(c, "snapshot", http.StatusOK, out, err)
}

// deleteSnapshot answers DELETE /v1/snapshots/{id} with 204.
func (s *Server) deleteSnapshot(c *gin.Context) {
	s.reply(c, "delete snapshot", http.StatusNoContent, nil, s.snapshots.Delete(c.Request.Context(), owner(c), c.Param("id")))
}

// sameEnvironment refuses a restore that names another environment than
// its snapshot's: a restored session runs where its snapshot was taken
// (its namespace needs that environment's packages).
func (s *Server) sameEnvironment(ctx context.Context, who string, req *wire.CreateSessionRequest) error {
	snap, err := s.snapshots.Get(ctx, who, req.Snapshot)
	if err != nil {
		return err
	}
	env := snap.Environment
	if env == "" {
		env = environments.Python
	}
	if req.Environment != env {
		return newError(core.ErrInvalid, fmt.Sprintf(`"environment" %q is not the environment of snapshot %s (%q): a restored session runs in its snapshot's environment; leave "environment" out`, req.Environment, req.Snapshot, env))
	}
	return nil
}
