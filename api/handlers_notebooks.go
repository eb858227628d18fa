package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// Notebook storage bounds.
const (
	// notebookKind is the state store kind of saved notebooks.
	notebookKind = "notebook"
	// notebookMaxBytes caps a PUT body (413 beyond).
	notebookMaxBytes = 4 << 20
	// notebookTTL is how long a saved notebook is kept after its last save.
	notebookTTL = 30 * 24 * time.Hour
)

// notebookRecord is a saved notebook as stored: the client's cells, kept
// as sent, and when they were saved.
type notebookRecord struct {
	Cells     json.RawMessage `json:"cells"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// notebookView is the GET answer.
type notebookView struct {
	Cells     json.RawMessage `json:"cells"`
	Version   int64           `json:"version"`
	UpdatedAt time.Time       `json:"updated_at"`
}

// putNotebookRequest is the PUT body. Version is the version the client
// last read (0 or absent when none was saved yet).
type putNotebookRequest struct {
	Cells   json.RawMessage `json:"cells"`
	Version *int64          `json:"version"`
}

// notebookSaved is the PUT answer.
type notebookSaved struct {
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}

// notebookKey is the store key of owner's notebook of session id.
func notebookKey(owner, id string) state.Key {
	return state.Key{Kind: notebookKind, Owner: owner, ID: id}
}

// getNotebook answers GET /v1/sessions/{id}/notebook: the saved cells and
// their version, 404 when none were saved.
func (s *Server) getNotebook(c *gin.Context) {
	rec, ok := s.ownedSession(c, false)
	if !ok {
		return
	}
	it, err := s.state.Get(c.Request.Context(), notebookKey(rec.Owner, rec.ID))
	if errors.Is(err, state.ErrNotFound) {
		abortError(c, newError(core.ErrNotFound, "no notebook saved for this session"))
		return
	}
	if err != nil {
		s.logPlatform("get notebook", rec.Owner, err)
		fail(c, err)
		return
	}
	var nb notebookRecord
	if err := json.Unmarshal(it.Value, &nb); err != nil {
		s.logPlatform("decode notebook", rec.Owner, err)
		fail(c, core.E("notebook", core.ErrInternal, err))
		return
	}
	c.JSON(http.StatusOK, notebookView{Cells: nb.Cells, Version: it.Version, UpdatedAt: nb.UpdatedAt})
}

// putNotebook answers PUT /v1/sessions/{id}/notebook: it saves the cells
// when the body's version is the saved one (0 for the first save) and
// answers the new version; another version is a 409 naming the current.
func (s *Server) putNotebook(c *gin.Context) {
	rec, ok := s.ownedSession(c, false)
	if !ok {
		return
	}
	var req putNotebookRequest
	if err := decodeJSON(c, &req, false); err != nil {
		fail(c, err)
		return
	}
	if err := req.check(); err != nil {
		fail(c, err)
		return
	}
	ctx := c.Request.Context()
	now := s.cfg.Now().UTC()
	value, err := json.Marshal(notebookRecord{Cells: req.Cells, UpdatedAt: now})
	if err != nil {
		fail(c, core.E("notebook", core.ErrInternal, err))
		return
	}
	cond := *req.Version
	if cond == 0 {
		cond = -1 // the first save: none may exist yet
	}
	k := notebookKey(rec.Owner, rec.ID)
	v, err := s.state.Put(ctx, k, value, state.PutOptions{TTL: notebookTTL, IfVersion: cond})
	switch {
	case errors.Is(err, state.ErrConflict):
		var current int64
		if it, gerr := s.state.Get(ctx, k); gerr == nil {
			current = it.Version
		}
		abortError(c, newError(core.ErrConflict,
			fmt.Sprintf("notebook version conflict: the saved version is %d, the request said %d; GET the notebook and retry", current, *req.Version)).
			withDetails(map[string]any{"current_version": current, "version": *req.Version}))
		return
	case errors.Is(err, state.ErrTooLarge):
		abortError(c, newError(core.ErrTooLarge, "the notebook is over the state store's size limit"))
		return
	case err != nil:
		s.logPlatform("put notebook", rec.Owner, err)
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, notebookSaved{Version: v, UpdatedAt: now})
}

// check validates the body: cells must be a JSON array and version, when
// given, a number not below 0.
func (r *putNotebookRequest) check() error {
	if b := bytes.TrimSpace(r.Cells); len(b) == 0 || b[0] != '[' {
		return newError(core.ErrInvalid, `"cells" must be a JSON array`).
			withDetails(map[string]any{"field": "cells"})
	}
	if r.Version == nil {
		r.Version = new(int64) // no version: a first save
	}
	if *r.Version < 0 {
		return newError(core.ErrInvalid, `"version" must not be negative`).
			withDetails(map[string]any{"field": "version"})
	}
	return nil
}
