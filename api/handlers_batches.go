package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/batchinput"
	"github.com/airlock-dev/airlock/wire"
)

// newBatches builds the batch manager over deps.Batches, dispatching
// through deps.Dispatcher (the one entry) and keeping artifacts in the
// API's artifact store.
func (s *Server) newBatches() (*batch.Manager, error) {
	if s.deps.Batches == nil {
		return nil, nil
	}
	cfg := s.deps.BatchConfig
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	cfg.Artifacts = func(owner string, arts []core.Artifact) []wire.Artifact {
		views, _ := s.calls.KeepArtifacts(context.Background(), owner, "", arts)
		return views
	}
	var runs batch.Runs
	if s.deps.Runs != nil && s.deps.Runs.Configured() {
		runs = s.deps.Runs
	}
	return batch.New(cfg, s.deps.Batches, s.deps.Dispatcher, runs)
}

// needBatches answers 503 when batches are not configured.
func (s *Server) needBatches(c *gin.Context) bool {
	if s.batches == nil {
		abortError(c, newError(core.ErrUnavailable, "batches are not configured on this server (no state store)"))
		return false
	}
	return true
}

// createBatch answers POST /v1/batches: a JSONL body (or multipart
// "file"), or a JSON map spec (or multipart "spec" with "archive" files),
// with ?concurrency= and ?completion_window=.
func (s *Server) createBatch(c *gin.Context) {
	if !s.needBatches(c) {
		return
	}
	spec, err := s.batchSpec(c)
	var b batch.Batch
	if err == nil {
		b, err = s.batches.Create(c.Request.Context(), owner(c), spec)
	}
	s.reply(c, "create batch", http.StatusCreated, b.Batch, err)
}

// batchSpec reads the batch of the request (see batchinput.Parser).
func (s *Server) batchSpec(c *gin.Context) (batch.Spec, error) {
	p := batchinput.Parser{Owner: owner(c), Input: s.calls.Input, MaxItems: cmp.Or(s.deps.BatchConfig.MaxItems, 50000),
		Runs: s.deps.Runs != nil && s.deps.Runs.Configured()}
	p.Call = func(req *wire.ToolCallRequest) (dispatcher.Call, error) { return s.calls.Call(p.Owner, req, "batch") }
	var spec batch.Spec
	var err error
	if p.Environment = c.Query("environment"); p.Environment != "" {
		// The batch's environment, the default of items naming none, is
		// checked once here: unknown 404, not allowed for the key 403.
		if _, err = s.resolveEnvironment(c.Request.Context(), p.Owner, p.Environment); err != nil {
			return spec, err
		}
	}
	if ct, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type")); ct == "multipart/form-data" {
		var form *multipart.Form
		if form, err = c.MultipartForm(); err == nil {
			spec, err = p.ParseForm(form)
		} else if !errors.As(err, new(*http.MaxBytesError)) {
			err = newError(core.ErrInvalid, "malformed multipart body: "+err.Error())
		}
	} else {
		var data []byte
		if data, err = io.ReadAll(c.Request.Body); err == nil {
			spec, err = p.Parse(data, nil)
		}
	}
	if err != nil {
		return spec, err
	}
	if v := c.Query("concurrency"); v != "" {
		if spec.Concurrency, err = strconv.Atoi(v); err != nil || spec.Concurrency < 1 {
			return spec, newError(core.ErrInvalid, `"concurrency" must be a positive integer`)
		}
	}
	if v := c.Query("completion_window"); v != "" {
		spec.CompletionWindow, err = batchinput.ParseWindow(v)
	}
	return spec, err
}

// listBatches answers GET /v1/batches: the caller's batches, newest first.
func (s *Server) listBatches(c *gin.Context) {
	if !s.needBatches(c) {
		return
	}
	limit := 100
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			abortError(c, newError(core.ErrInvalid, `"limit" must be a positive integer`))
			return
		}
		limit = n
	}
	bs, err := s.batches.List(c.Request.Context(), owner(c), limit+1)
	if err != nil {
		fail(c, err)
		return
	}
	more := len(bs) > limit
	if more {
		bs = bs[:limit]
	}
	out := wire.BatchList{Object: "list", Data: make([]wire.Batch, len(bs)), HasMore: more}
	for i, b := range bs {
		out.Data[i] = b.Batch
	}
	c.JSON(http.StatusOK, out)
}

// batchOp answers a route whose answer is the batch after op: GET
// /v1/batches/{id}, its cancel and its retry (of the failed items only).
func (s *Server) batchOp(op func(m *batch.Manager, ctx context.Context, owner, id string) (batch.Batch, error)) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !s.needBatches(c) {
			return
		}
		b, err := op(s.batches, c.Request.Context(), owner(c), c.Param("id"))
		if err != nil {
			fail(c, err)
			return
		}
		c.JSON(http.StatusOK, b.Batch)
	}
}

// batchResults answers GET /v1/batches/{id}/results (JSONL, one line per
// item); ?view=errors keeps the failed ones, like /errors.
func (s *Server) batchResults(c *gin.Context) {
	s.writeLines(c, c.Query("view") == "errors")
}

// batchErrors answers GET /v1/batches/{id}/errors.
func (s *Server) batchErrors(c *gin.Context) { s.writeLines(c, true) }

func (s *Server) writeLines(c *gin.Context, errorsOnly bool) {
	if !s.needBatches(c) {
		return
	}
	// The lines are streamed as read from the store, never all held; a
	// store failure after the first line aborts the response, so a client
	// never takes a cut stream for a whole one.
	started := false
	start := func() {
		if !started {
			started = true
			c.Header("Content-Type", "application/jsonl")
			c.Status(http.StatusOK)
		}
	}
	enc := json.NewEncoder(c.Writer)
	var gone error // a write to the client that failed: the stream ends
	err := s.batches.EachResult(c.Request.Context(), owner(c), c.Param("id"), func(l *wire.BatchLine) error {
		if errorsOnly && !l.Failed() {
			return nil
		}
		start()
		gone = enc.Encode(l)
		return gone
	})
	switch {
	case err == nil:
		start()
	case gone != nil:
	case !started:
		fail(c, err)
	default:
		s.log.Warn("api: batch results cut short", "batch", c.Param("id"), "err", err)
		panic(http.ErrAbortHandler)
	}
}

// batchSummary answers GET /v1/batches/{id}/summary.
func (s *Server) batchSummary(c *gin.Context) {
	b, lines, ok := s.batchAndLines(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, batch.Summarize(b, lines))
}

// batchReport answers GET /v1/batches/{id}/report: self-contained HTML.
func (s *Server) batchReport(c *gin.Context) {
	b, lines, ok := s.batchAndLines(c)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := batch.Report(&buf, b, lines); err != nil {
		fail(c, core.E("batch.report", core.ErrInternal, err))
		return
	}
	c.Header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	c.Data(http.StatusOK, "text/html; charset=utf-8", buf.Bytes())
}

func (s *Server) batchAndLines(c *gin.Context) (batch.Batch, []wire.BatchLine, bool) {
	if !s.needBatches(c) {
		return batch.Batch{}, nil, false
	}
	b, err := s.batches.Get(c.Request.Context(), owner(c), c.Param("id"))
	if err == nil {
		var lines []wire.BatchLine
		lines, err = s.batches.Results(c.Request.Context(), owner(c), c.Param("id"))
		if err == nil {
			return b, lines, true
		}
	}
	fail(c, err)
	return batch.Batch{}, nil, false
}
