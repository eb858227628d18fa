package jupyter

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// kernel is one session served as a kernel: its connections, its shell
// queue (requests run one at a time, in order, as in ipykernel) and its
// execution count.
type kernel struct {
	g     *Gateway
	owner string
	id    string
	ksid  string // the kernel's session id in the headers it writes

	ctx    context.Context // ends when the kernel is shut down
	cancel context.CancelFunc
	queue  chan shellReq

	mu    sync.Mutex
	conns map[*conn]struct{}
	count int
	busy  bool
	last  time.Time // last activity: a request or an output
	input *conn     // the connection an input_request went to
}

// shellReq is a shell message waiting for its turn, with the connection
// its replies go to.
type shellReq struct {
	c *conn
	m inMsg
}

// newKernel starts the kernel's shell worker.
func newKernel(g *Gateway, owner, id string, count int) *kernel {
	ctx, cancel := context.WithCancel(context.Background())
	k := &kernel{g: g, owner: owner, id: id, ksid: newID(), ctx: ctx, cancel: cancel,
		queue: make(chan shellReq, g.cfg.MaxQueued), conns: map[*conn]struct{}{}, count: count, last: time.Now()}
	go k.serve()
	return k
}

// stop ends the shell worker, the running cell's wait and every
// connection.
func (k *kernel) stop() {
	k.cancel()
	for _, c := range k.connections() {
		c.close("the kernel was shut down")
	}
}

// connections returns the kernel's connections now.
func (k *kernel) connections() []*conn {
	k.mu.Lock()
	defer k.mu.Unlock()
	conns := make([]*conn, 0, len(k.conns))
	for c := range k.conns {
		conns = append(conns, c)
	}
	return conns
}

// attach and detach track the kernel's websocket connections.
func (k *kernel) attach(c *conn) {
	k.mu.Lock()
	k.conns[c] = struct{}{}
	k.mu.Unlock()
}

func (k *kernel) detach(c *conn) {
	k.mu.Lock()
	delete(k.conns, c)
	if k.input == c {
		k.input = nil
	}
	k.mu.Unlock()
}

// touch records activity now.
func (k *kernel) touch() {
	k.mu.Lock()
	k.last = time.Now()
	k.mu.Unlock()
}

// state returns the kernel's execution state, connections and last
// activity.
func (k *kernel) state() (busy bool, conns int, last time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.busy, len(k.conns), k.last
}

// publish sends m on iopub to every connection.
func (k *kernel) publish(m outMsg) {
	for _, c := range k.connections() {
		c.send(m)
	}
}

// status publishes the kernel's execution state for parent.
func (k *kernel) status(parent *inMsg, state string) {
	k.publish(reply(k.ksid, parent, "iopub", "status", map[string]any{"execution_state": state}))
}

// enqueue queues a shell request, or answers at once that the queue is full.
func (k *kernel) enqueue(r shellReq) {
	k.touch()
	select {
	case k.queue <- r:
	default:
		r.c.send(reply(k.ksid, &r.m, "shell", replyType(r.m.Header.MsgType),
			map[string]any{"status": "error", "ename": "Busy", "evalue": "too many requests are queued for this kernel", "traceback": []string{}}))
	}
}

// serve runs the shell requests one at a time until the kernel stops.
func (k *kernel) serve() {
	for {
		select {
		case <-k.ctx.Done():
			return
		case r := <-k.queue:
			k.handle(r)
		}
	}
}

// handle runs one shell request between status busy and idle.
func (k *kernel) handle(r shellReq) {
	k.mu.Lock()
	k.busy = true
	k.mu.Unlock()
	k.status(&r.m, "busy")
	failed := false
	switch r.m.Header.MsgType {
	case "execute_request":
		failed = k.execute(r)
	case "complete_request", "inspect_request", "is_complete_request":
		k.introspect(r)
	default:
		// comm messages and unknown requests: no reply, as ipykernel.
	}
	k.mu.Lock()
	k.busy = false
	k.last = time.Now()
	k.mu.Unlock()
	k.status(&r.m, "idle")
	if failed {
		k.abortQueued()
	}
}

// abortQueued answers every request queued while a cell failed with
// stop_on_error: status "aborted", as ipykernel does.
func (k *kernel) abortQueued() {
	for {
		select {
		case r := <-k.queue:
			k.status(&r.m, "busy")
			content := map[string]any{"status": "aborted"}
			if r.m.Header.MsgType == "execute_request" {
				k.mu.Lock()
				content["execution_count"] = k.count
				k.mu.Unlock()
			}
			r.c.send(reply(k.ksid, &r.m, "shell", replyType(r.m.Header.MsgType), content))
			k.status(&r.m, "idle")
		default:
			return
		}
	}
}

// executeRequest is the content of an execute_request.
type executeRequest struct {
	Code         string `json:"code"`
	Silent       bool   `json:"silent"`
	StoreHistory *bool  `json:"store_history"`
	AllowStdin   bool   `json:"allow_stdin"`
	StopOnError  *bool  `json:"stop_on_error"`
}

// execute runs an execute_request: execute_input, the outputs as they
// come, the error, execute_reply. It reports a failure that must abort
// the queued requests (stop_on_error).
func (k *kernel) execute(r shellReq) bool {
	var req executeRequest
	if err := json.Unmarshal(r.m.Content, &req); err != nil {
		r.c.send(reply(k.ksid, &r.m, "shell", "execute_reply", map[string]any{"status": "error", "ename": "BadRequest",
			"evalue": "execute_request content: " + err.Error(), "traceback": []string{}, "execution_count": k.count}))
		return false
	}
	k.mu.Lock()
	next := k.count + 1
	k.mu.Unlock()
	if !req.Silent {
		k.publish(reply(k.ksid, &r.m, "iopub", "execute_input", map[string]any{"code": req.Code, "execution_count": next}))
	}
	ex := &execution{k: k, r: r, silent: req.Silent, count: next, allowStdin: req.AllowStdin}
	res, err := ex.run(req.Code)
	var f *failure
	if err != nil {
		f = platformFailure(err)
	} else {
		if res.ExecutionCount > 0 {
			next = res.ExecutionCount
		}
		ex.count = next
		ex.finish(res)
		f = cellFailure(res)
	}
	k.mu.Lock()
	k.count = next
	k.mu.Unlock()
	content := map[string]any{"status": "ok", "execution_count": next, "user_expressions": map[string]any{}, "payload": []any{}}
	if f != nil {
		if !req.Silent {
			k.publish(reply(k.ksid, &r.m, "iopub", "error", f.content()))
		}
		content = f.content()
		content["status"] = "error"
		content["execution_count"] = next
	}
	r.c.send(reply(k.ksid, &r.m, "shell", "execute_reply", content))
	return f != nil && (req.StopOnError == nil || *req.StopOnError)
}

// introspect answers complete, inspect and is_complete requests from the
// session's kernel.
func (k *kernel) introspect(r shellReq) {
	var q struct {
		Code        string `json:"code"`
		CursorPos   *int   `json:"cursor_pos"`
		DetailLevel int    `json:"detail_level"`
	}
	_ = json.Unmarshal(r.m.Content, &q)
	kind := map[string]string{"complete_request": core.IntrospectComplete, "inspect_request": core.IntrospectInspect,
		"is_complete_request": core.IntrospectIsComplete}[r.m.Header.MsgType]
	pos := len([]rune(q.Code))
	if q.CursorPos != nil {
		pos = *q.CursorPos
	}
	typ := replyType(r.m.Header.MsgType)
	ans, err := k.g.backend.Introspect(k.ctx, k.owner, k.id, q.Code, core.Introspect{Kind: kind, CursorPos: pos, DetailLevel: q.DetailLevel})
	if err != nil {
		k.g.cfg.Logger.Warn("jupyter: introspect failed", "kernel", k.id, "err", err)
		var content map[string]any
		switch kind {
		case core.IntrospectComplete:
			content = map[string]any{"status": "ok", "matches": []string{}, "cursor_start": pos, "cursor_end": pos, "metadata": map[string]any{}}
		case core.IntrospectInspect:
			content = map[string]any{"status": "ok", "found": false, "data": map[string]any{}, "metadata": map[string]any{}}
		default:
			content = map[string]any{"status": "unknown"}
		}
		r.c.send(reply(k.ksid, &r.m, "shell", typ, content))
		return
	}
	r.c.send(reply(k.ksid, &r.m, "shell", typ, ans))
}

// replyType is the reply type of a request type.
func replyType(request string) string {
	if n := len(request) - len("_request"); n > 0 && request[n:] == "_request" {
		return request[:n] + "_reply"
	}
	return request + "_reply"
}
