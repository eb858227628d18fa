package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/batchmap"
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
// "file"), or a JSON map spec (or multipart "spec" with "archive" files).
func (s *Server) createBatch(c *gin.Context) {
	if !s.needBatches(c) {
		return
	}
	ct, _, _ := mime.ParseMediaType(c.GetHeader("Content-Type"))
	var spec batch.Spec
	var err error
	switch {
	case ct == "multipart/form-data":
		spec, err = s.batchFromMultipart(c)
	default:
		var data []byte
		data, err = io.ReadAll(c.Request.Body)
		if err == nil {
			spec, err = s.batchFromBody(c, data, nil)
		}
	}
	if err != nil {
		fail(c, err)
		return
	}
	if err := batchQuery(c, &spec); err != nil {
		fail(c, err)
		return
	}
	b, err := s.batches.Create(c.Request.Context(), owner(c), spec)
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusCreated, b.Batch)
}

// batchQuery applies ?concurrency= and ?completion_window=.
func batchQuery(c *gin.Context, spec *batch.Spec) error {
	if v := c.Query("concurrency"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return newError(core.ErrInvalid, `"concurrency" must be a positive integer`)
		}
		spec.Concurrency = n
	}
	if v := c.Query("completion_window"); v != "" {
		d, err := batchmap.ParseWindow(v)
		if err != nil {
			return err
		}
		spec.CompletionWindow = d
	}
	return nil
}

// batchFromBody parses a JSONL body or a JSON map spec (an object with
// "each" or, with archives, "tool_call" alone).
func (s *Server) batchFromBody(c *gin.Context, data []byte, archives [][]byte) (batch.Spec, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return batch.Spec{}, newError(core.ErrInvalid, "request body is empty; send JSONL items or a map spec")
	}
	// A body that is one JSON object, on one line or pretty-printed over
	// many, may be a map spec; JSONL of several items is not one value.
	if trimmed[0] == '{' || archives != nil {
		var probe map[string]json.RawMessage
		if json.Unmarshal(trimmed, &probe) == nil {
			if _, ok := probe["each"]; ok || archives != nil {
				return s.batchFromMap(c, trimmed, archives)
			}
		}
	}
	raws, err := batch.ParseJSONL(bytes.NewReader(data), s.maxBatchItems())
	if err != nil {
		return batch.Spec{}, err
	}
	spec := batch.Spec{Items: make([]batch.Item, 0, len(raws))}
	for _, r := range raws {
		it := batch.Item{CustomID: r.CustomID}
		if r.Run != nil {
			run, err := s.batchRun(c, r)
			if err != nil {
				return batch.Spec{}, err
			}
			it.Run = run
		} else {
			call, err := s.batchCall(c, r.ToolCall, r.Line)
			if err != nil {
				return batch.Spec{}, err
			}
			it.Call = call
		}
		spec.Items = append(spec.Items, it)
	}
	return spec, nil
}

func (s *Server) maxBatchItems() int {
	if s.deps.BatchConfig.MaxItems > 0 {
		return s.deps.BatchConfig.MaxItems
	}
	return 50000
}

// batchCall checks one item's tool call like POST /v1/tool-calls does and
// builds its dispatcher call.
func (s *Server) batchCall(c *gin.Context, raw json.RawMessage, line int) (*dispatcher.Call, error) {
	where := "the tool_call template"
	if line > 0 {
		where = fmt.Sprintf("line %d", line)
	}
	bad := func(msg string) error { return newError(core.ErrInvalid, where+": "+msg) }
	var req wire.ToolCallRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, bad("not a valid tool call: " + err.Error())
	}
	if req.SessionID != "" {
		return nil, bad(`"session_id" is not allowed in batch items; each item runs in a fresh sandbox`)
	}
	if len(req.Function.Arguments) > 0 && req.Function.Arguments[0] == '"' {
		var s string // OpenAI sends arguments as a JSON string
		if json.Unmarshal(req.Function.Arguments, &s) == nil {
			req.Function.Arguments = json.RawMessage(s)
		}
	}
	call, err := s.calls.Call(owner(c), &req, "batch")
	if err != nil {
		return nil, bad(toError(nil, err).Message)
	}
	call.ApprovalTools, call.RequireApproval = nil, nil
	return &call, nil
}

// batchRun checks a run item; without a model configured it is refused.
func (s *Server) batchRun(c *gin.Context, r batch.RawItem) (*agent.RunRequest, error) {
	if s.deps.Runs == nil || !s.deps.Runs.Configured() {
		return nil, newError(core.ErrInvalid, fmt.Sprintf("line %d: run items need a model, and none is configured on this server", r.Line))
	}
	var body struct {
		Goal     string          `json:"goal"`
		Messages json.RawMessage `json:"messages"`
		Model    string          `json:"model"`
		MaxSteps int             `json:"max_steps"`
		Input    string          `json:"input"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.Run))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return nil, newError(core.ErrInvalid, fmt.Sprintf("line %d: not a valid run: %v", r.Line, err))
	}
	if strings.TrimSpace(body.Goal) == "" && len(body.Messages) == 0 {
		return nil, newError(core.ErrInvalid, fmt.Sprintf(`line %d: a run needs "goal" or "messages"`, r.Line))
	}
	mount, err := s.calls.Input(body.Input)
	if err != nil {
		return nil, newError(core.ErrInvalid, fmt.Sprintf("line %d: %s", r.Line, toError(nil, err).Message))
	}
	return &agent.RunRequest{Goal: body.Goal, Messages: body.Messages, Model: body.Model, MaxSteps: body.MaxSteps,
		Mount: mount, Owner: owner(c)}, nil
}

// batchFromMap expands a map spec over its input folder (or archives).
func (s *Server) batchFromMap(c *gin.Context, data []byte, archives [][]byte) (batch.Spec, error) {
	var m wire.BatchMapSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return batch.Spec{}, newError(core.ErrInvalid, "malformed map spec: "+err.Error())
	}
	if len(m.ToolCall) == 0 {
		return batch.Spec{}, newError(core.ErrInvalid, `a map spec needs "tool_call"`)
	}
	tmpl, err := s.batchCall(c, m.ToolCall, 0)
	if err != nil {
		return batch.Spec{}, err
	}
	return batchmap.Expand(m, *tmpl, s.calls.Input, archives, s.maxBatchItems())
}

// batchFromMultipart reads an uploaded JSONL "file", or a "spec" with
// "archive" files.
func (s *Server) batchFromMultipart(c *gin.Context) (batch.Spec, error) {
	form, err := c.MultipartForm()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return batch.Spec{}, err
		}
		return batch.Spec{}, newError(core.ErrInvalid, "malformed multipart body: "+err.Error())
	}
	if fs := form.File["file"]; len(fs) == 1 {
		f, err := fs[0].Open()
		if err != nil {
			return batch.Spec{}, newError(core.ErrInvalid, "could not read the uploaded file")
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		if err != nil {
			return batch.Spec{}, newError(core.ErrInvalid, "could not read the uploaded file")
		}
		return s.batchFromBody(c, data, nil)
	}
	specs := form.Value["spec"]
	if len(specs) != 1 {
		return batch.Spec{}, newError(core.ErrInvalid, `send a "file" (JSONL) or a "spec" (JSON) with "archive" files`)
	}
	arcs := form.File["archive"]
	if len(arcs) == 0 {
		return s.batchFromBody(c, []byte(specs[0]), nil)
	}
	data, err := readArchives(arcs)
	if err != nil {
		return batch.Spec{}, err
	}
	return s.batchFromBody(c, []byte(specs[0]), data)
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

// getBatch answers GET /v1/batches/{id}.
func (s *Server) getBatch(c *gin.Context) {
	if !s.needBatches(c) {
		return
	}
	b, err := s.batches.Get(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, b.Batch)
}

// cancelBatch answers POST /v1/batches/{id}/cancel.
func (s *Server) cancelBatch(c *gin.Context) {
	if !s.needBatches(c) {
		return
	}
	b, err := s.batches.Cancel(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, b.Batch)
}

// retryBatch answers POST /v1/batches/{id}/retry: failed items only.
func (s *Server) retryBatch(c *gin.Context) {
	if !s.needBatches(c) {
		return
	}
	b, err := s.batches.Retry(c.Request.Context(), owner(c), c.Param("id"))
	if err != nil {
		fail(c, err)
		return
	}
	c.JSON(http.StatusOK, b.Batch)
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
	err := s.batches.EachResult(c.Request.Context(), owner(c), c.Param("id"), func(l *wire.BatchLine) error {
		if errorsOnly && !l.Failed() {
			return nil
		}
		start()
		if err := enc.Encode(l); err != nil {
			return errClientGone{err}
		}
		return nil
	})
	var gone errClientGone
	switch {
	case err == nil:
		start()
	case errors.As(err, &gone):
	case !started:
		fail(c, err)
	default:
		s.log.Warn("api: batch results cut short", "batch", c.Param("id"), "err", err)
		panic(http.ErrAbortHandler)
	}
}

// errClientGone is a write to the client that failed: the stream ends.
type errClientGone struct{ err error }

func (e errClientGone) Error() string { return "write results: " + e.err.Error() }

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

// readArchives reads and checks uploaded tar/zip archives, one item each
// (see batchmap.CheckArchive); nothing is unpacked on the host.
func readArchives(files []*multipart.FileHeader) ([][]byte, error) {
	var out [][]byte
	for i, fh := range files {
		if fh.Size > core.MaxArchiveBytes {
			return nil, batchmap.ArchiveTooLarge(i, fh.Filename)
		}
		f, err := fh.Open()
		if err != nil {
			return nil, newError(core.ErrInvalid, fmt.Sprintf("archive %d (%s): could not be read", i, fh.Filename))
		}
		data, err := io.ReadAll(io.LimitReader(f, core.MaxArchiveBytes+1))
		_ = f.Close()
		if err != nil {
			return nil, newError(core.ErrInvalid, fmt.Sprintf("archive %d (%s): could not be read", i, fh.Filename))
		}
		if err := batchmap.CheckArchive(i, fh.Filename, data); err != nil {
			return nil, err
		}
		out = append(out, data)
	}
	return out, nil
}
