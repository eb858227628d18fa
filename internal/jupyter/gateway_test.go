package jupyter

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// harness is a gateway over a fake backend behind an httptest server
// whose X-Owner header stands in for the API's key authentication.
type harness struct {
	t    *testing.T
	f    *fakeBackend
	g    *Gateway
	srv  *httptest.Server
	stop chan struct{}
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{t: t, f: newFake(), stop: make(chan struct{})}
	cfg.WriteError, cfg.Stop = writeError, h.stop
	h.g = New(cfg, h.f)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.g.Handler().ServeHTTP(w, r.WithContext(WithOwner(r.Context(), r.Header.Get("X-Owner"))))
	}))
	t.Cleanup(func() { close(h.stop); h.srv.Close() })
	return h
}

// do sends a REST request as owner and returns the status and body.
func (h *harness) do(owner, method, path, body string) (int, string) {
	h.t.Helper()
	req, _ := http.NewRequest(method, h.srv.URL+path, strings.NewReader(body))
	req.Header.Set("X-Owner", owner)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// start starts a kernel for owner and returns its id.
func (h *harness) start(owner string) string {
	h.t.Helper()
	st, body := h.do(owner, "POST", "/api/kernels", `{"name":"python"}`)
	if st != 201 {
		h.t.Fatalf("start kernel: %d %s", st, body)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	return m["id"].(string)
}

// client is a websocket to one kernel that records every message.
type client struct {
	t    *testing.T
	ws   *websocket.Conn
	mu   sync.Mutex
	msgs []map[string]any
	n    int
}

func (h *harness) dial(owner, kid string) *client {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.srv.URL, "http")+"/api/kernels/"+kid+"/channels",
		&websocket.DialOptions{HTTPHeader: http.Header{"X-Owner": {owner}}})
	if err != nil {
		h.t.Fatalf("dial: %v", err)
	}
	c := &client{t: h.t, ws: ws}
	go func() {
		for {
			_, data, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(data, &m) == nil {
				c.mu.Lock()
				c.msgs = append(c.msgs, m)
				c.mu.Unlock()
			}
		}
	}()
	h.t.Cleanup(func() { _ = ws.CloseNow() })
	return c
}

// send writes a request and returns its msg_id.
func (c *client) send(channel, typ string, content any) string {
	c.t.Helper()
	c.n++
	id := fmt.Sprintf("m%d", c.n)
	msg := map[string]any{"header": map[string]any{"msg_id": id, "msg_type": typ, "session": "cs", "date": 1.5e9},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "content": content}
	if channel != "" {
		msg["channel"] = channel
	}
	b, _ := json.Marshal(msg)
	if err := c.ws.Write(context.Background(), websocket.MessageText, b); err != nil {
		c.t.Fatal(err)
	}
	return id
}

// of returns "channel:type" of the messages answering id, and the messages.
func (c *client) of(id string) ([]string, []map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var types []string
	var ms []map[string]any
	for _, m := range c.msgs {
		if ph, _ := m["parent_header"].(map[string]any); ph["msg_id"] == id {
			types = append(types, m["channel"].(string)+":"+m["msg_type"].(string))
			ms = append(ms, m)
		}
	}
	return types, ms
}

// await waits until the messages answering id end with idle.
func (c *client) await(id string) ([]string, []map[string]any) {
	c.t.Helper()
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for time.Now().Before(deadline) {
		types, ms := c.of(id)
		if n := len(ms); n > 0 && ms[n-1]["msg_type"] == "status" && ms[n-1]["content"].(map[string]any)["execution_state"] == "idle" {
			return types, ms
		}
		time.Sleep(5 * time.Millisecond)
	}
	types, _ := c.of(id)
	c.t.Fatalf("no idle for %s: %v", id, types)
	return nil, nil
}

// content returns the content of the first message of type typ.
func content(ms []map[string]any, typ string) map[string]any {
	for _, m := range ms {
		if m["msg_type"] == typ {
			return m["content"].(map[string]any)
		}
	}
	return nil
}

func execReq(code string) map[string]any {
	return map[string]any{"code": code, "silent": false, "store_history": true, "allow_stdin": true, "stop_on_error": true}
}

// TestExecuteTranslation: live events become stream, display_data and
// execute_result (sent last, with the count the kernel reported), in the
// order busy, execute_input, outputs, execute_reply, idle; what the live
// stream missed is sent from the result.
func TestExecuteTranslation(t *testing.T) {
	h := newHarness(t, Config{})
	h.f.run = func(_ context.Context, cell Cell, emit core.Sink) (core.Result, error) {
		emit(core.Event{Kind: core.EventStdout, Text: "a\n"})
		emit(core.Event{Kind: core.EventDisplay, Data: map[string]string{"text/plain": "fig", "image/png": "iVBOR"}})
		emit(core.Event{Kind: core.EventDisplay, Data: map[string]string{"text/plain": "42"}, Result: true})
		emit(core.Event{Kind: core.EventClear, Wait: true})
		return core.Result{Status: core.StatusOK, Stdout: "a\nb\n", ExecutionCount: 7,
			Display: []core.Display{{Data: map[string]string{"text/plain": "fig"}}, {Data: map[string]string{"text/plain": "42"}, Result: true}}}, nil
	}
	c := h.dial("alice", h.start("alice"))
	id := c.send("shell", "execute_request", execReq("x"))
	types, ms := c.await(id)
	want := []string{"iopub:status", "iopub:execute_input", "iopub:stream", "iopub:display_data", "iopub:clear_output",
		"iopub:stream", "iopub:execute_result", "shell:execute_reply", "iopub:status"}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Fatalf("messages:\n got %v\nwant %v", types, want)
	}
	if s := ms[0]["content"].(map[string]any)["execution_state"]; s != "busy" {
		t.Fatalf("first status %v", s)
	}
	if in := ms[1]["content"].(map[string]any); in["code"] != "x" || in["execution_count"] != float64(1) {
		t.Fatalf("execute_input %v", in)
	}
	if s := ms[5]["content"].(map[string]any)["text"]; s != "b\n" {
		t.Fatalf("the stdout the live stream missed: %q", s)
	}
	if r := content(ms, "execute_result"); r["execution_count"] != float64(7) || r["data"].(map[string]any)["text/plain"] != "42" {
		t.Fatalf("execute_result %v", r)
	}
	if r := content(ms, "execute_reply"); r["status"] != "ok" || r["execution_count"] != float64(7) {
		t.Fatalf("execute_reply %v", r)
	}
	for _, m := range ms {
		h := m["header"].(map[string]any)
		if h["session"] == "" || h["msg_id"] == "" || h["version"] != "5.3" || m["msg_id"] != h["msg_id"] {
			t.Fatalf("header %v", h)
		}
		if ph := m["parent_header"].(map[string]any); ph["session"] != "cs" || ph["date"] != 1.5e9 {
			t.Fatalf("parent_header is not the request's header verbatim: %v", ph)
		}
	}
	// The next cell's execute_input counts from the kernel's count.
	types, ms = c.await(c.send("shell", "execute_request", execReq("y")))
	if in := ms[1]["content"].(map[string]any); in["execution_count"] != float64(8) {
		t.Fatalf("second execute_input %v (%v)", in, types)
	}
}

// TestExecuteFailures: an exception, a timeout, a refusal and a platform
// failure become an error message and an error reply.
func TestExecuteFailures(t *testing.T) {
	cases := []struct {
		res        core.Result
		err        error
		ename, val string
	}{
		{core.Result{Status: core.StatusError, Error: &core.ExecError{Name: "ZeroDivisionError", Value: "division by zero", Traceback: []string{"Traceback", "ZeroDivisionError: division by zero"}}},
			nil, "ZeroDivisionError", "division by zero"},
		{core.Result{Status: core.StatusTimeout, Message: "timed out after 10000 ms"}, nil, "TimeoutError", "timed out after 10000 ms"},
		{core.Result{Status: core.StatusRejected, Message: "policy: python.subprocess"}, nil, "Rejected", "policy: python.subprocess"},
		{core.Result{Status: core.StatusOOM, Message: "memory"}, nil, "MemoryError", "memory"},
		{core.Result{}, core.Errorf("x", core.ErrRateLimited, "rate limit exceeded"), "AirlockError", "rate_limited: x: rate limit exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.ename, func(t *testing.T) {
			h := newHarness(t, Config{})
			h.f.run = func(context.Context, Cell, core.Sink) (core.Result, error) { return tc.res, tc.err }
			c := h.dial("alice", h.start("alice"))
			types, ms := c.await(c.send("shell", "execute_request", execReq("boom")))
			e, r := content(ms, "error"), content(ms, "execute_reply")
			if e == nil || e["ename"] != tc.ename || e["evalue"] != tc.val || len(e["traceback"].([]any)) == 0 {
				t.Fatalf("error %v (%v)", e, types)
			}
			if r["status"] != "error" || r["ename"] != tc.ename {
				t.Fatalf("execute_reply %v", r)
			}
		})
	}
}

// TestStopOnError: requests queued behind a failing cell are aborted;
// with stop_on_error false they run.
func TestStopOnError(t *testing.T) {
	for _, stop := range []bool{true, false} {
		t.Run(fmt.Sprint(stop), func(t *testing.T) {
			h := newHarness(t, Config{})
			release := make(chan struct{})
			var ran sync.Map
			h.f.run = func(_ context.Context, cell Cell, _ core.Sink) (core.Result, error) {
				ran.Store(cell.Code, true)
				if cell.Code == "fail" {
					<-release
					return core.Result{Status: core.StatusError, Error: &core.ExecError{Name: "ValueError", Value: "x"}}, nil
				}
				return core.Result{Status: core.StatusOK}, nil
			}
			c := h.dial("alice", h.start("alice"))
			req := execReq("fail")
			req["stop_on_error"] = stop
			first := c.send("shell", "execute_request", req)
			second := c.send("shell", "execute_request", execReq("next"))
			third := c.send("shell", "complete_request", map[string]any{"code": "x", "cursor_pos": 1})
			time.Sleep(50 * time.Millisecond)
			close(release)
			c.await(first)
			_, ms := c.await(second)
			_, cm := c.await(third)
			r := content(ms, "execute_reply")
			_, didRun := ran.Load("next")
			if stop && (r["status"] != "aborted" || didRun || content(cm, "complete_reply")["status"] != "aborted") {
				t.Fatalf("stop_on_error: queued reply %v, ran %v, complete %v", r, didRun, content(cm, "complete_reply"))
			}
			if !stop && (r["status"] != "ok" || !didRun) {
				t.Fatalf("no stop_on_error: queued reply %v, ran %v", r, didRun)
			}
		})
	}
}

// TestInputRequest: input() in a cell becomes input_request on the stdin
// channel of the connection that sent the cell; input_reply reaches the
// backend.
func TestInputRequest(t *testing.T) {
	h := newHarness(t, Config{})
	h.f.run = func(ctx context.Context, cell Cell, emit core.Sink) (core.Result, error) {
		if !cell.AllowStdin {
			return core.Result{Status: core.StatusError}, nil
		}
		emit(core.Event{Kind: core.EventInput, Text: "who? ", Password: true})
		for {
			h.f.mu.Lock()
			n := len(h.f.inputs)
			h.f.mu.Unlock()
			if n > 0 {
				return core.Result{Status: core.StatusOK}, nil
			}
			select {
			case <-ctx.Done():
				return core.Result{}, ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	c := h.dial("alice", h.start("alice"))
	id := c.send("shell", "execute_request", execReq("input()"))
	deadline := time.Now().Add(testscale.D(5 * time.Second))
	for {
		types, ms := c.of(id)
		if in := content(ms, "input_request"); in != nil {
			if in["prompt"] != "who? " || in["password"] != true || !strings.Contains(strings.Join(types, " "), "stdin:input_request") {
				t.Fatalf("input_request %v on %v", in, types)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no input_request: %v", types)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.send("stdin", "input_reply", map[string]any{"value": "ada"})
	_, ms := c.await(id)
	if r := content(ms, "execute_reply"); r["status"] != "ok" || h.f.inputs[0] != "ada" {
		t.Fatalf("after input_reply: %v, inputs %v", r, h.f.inputs)
	}
}

// TestShellAndControlRequests: kernel_info and comm_info are answered at
// once, complete goes to the kernel with its cursor, a message without a
// channel is a shell one, interrupt and shutdown work on control.
func TestShellAndControlRequests(t *testing.T) {
	h := newHarness(t, Config{})
	kid := h.start("alice")
	c := h.dial("alice", kid)
	types, ms := c.await(c.send("shell", "kernel_info_request", map[string]any{}))
	if strings.Join(types, " ") != "iopub:status shell:kernel_info_reply iopub:status" || content(ms, "kernel_info_reply")["protocol_version"] != "5.3" {
		t.Fatalf("kernel_info: %v %v", types, ms)
	}
	_, ms = c.await(c.send("shell", "comm_info_request", map[string]any{}))
	if r := content(ms, "comm_info_reply"); r["status"] != "ok" || len(r["comms"].(map[string]any)) != 0 {
		t.Fatalf("comm_info_reply %v", r)
	}
	_, ms = c.await(c.send("", "complete_request", map[string]any{"code": "import pan", "cursor_pos": 10}))
	if r := content(ms, "complete_reply"); r["cursor_start"] != float64(7) || h.f.introQ[0] != (core.Introspect{Kind: core.IntrospectComplete, CursorPos: 10}) {
		t.Fatalf("complete_reply %v, asked %v", r, h.f.introQ)
	}
	id := c.send("control", "interrupt_request", map[string]any{})
	waitFor(t, func() bool { _, ms := c.of(id); return content(ms, "interrupt_reply") != nil })
	if h.f.interrupted != 1 {
		t.Fatalf("interrupts: %d", h.f.interrupted)
	}
	id = c.send("control", "shutdown_request", map[string]any{"restart": false})
	waitFor(t, func() bool {
		types, _ := c.of(id)
		return strings.Contains(strings.Join(types, " "), "iopub:shutdown_reply")
	})
	if st, _ := h.do("alice", "GET", "/api/kernels/"+kid, ""); st != 404 {
		t.Fatalf("after shutdown_request GET answers %d", st)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(5 * time.Second))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestREST: specs, start (python3 names the python spec), list, get,
// another owner's kernel 404 everywhere, delete.
func TestREST(t *testing.T) {
	h := newHarness(t, Config{})
	st, body := h.do("alice", "GET", "/api/kernelspecs", "")
	if st != 200 || !strings.Contains(body, `"default":"python"`) || !strings.Contains(body, `"display_name":"Python 3 (Airlock)"`) {
		t.Fatalf("kernelspecs %d %s", st, body)
	}
	if st, _ := h.do("alice", "GET", "/api/kernelspecs/nope", ""); st != 404 {
		t.Fatalf("unknown spec: %d", st)
	}
	if st, _ := h.do("alice", "POST", "/api/kernels", `{"name":"ruby"}`); st != 404 {
		t.Fatalf("start unknown spec: %d", st)
	}
	if st, _ := h.do("alice", "POST", "/api/kernels", `{"name":`); st != 400 {
		t.Fatalf("start with a broken body: %d", st)
	}
	st, body = h.do("alice", "POST", "/api/kernels", `{"name":"python3","env":{"KERNEL_WORKING_DIR":"/x"}}`)
	if st != 201 {
		t.Fatalf("start python3: %d %s", st, body)
	}
	var m map[string]any
	_ = json.Unmarshal([]byte(body), &m)
	kid := m["id"].(string)
	if kid != "s-00000000-0000-0000-00000001" || m["execution_state"] != "idle" || m["name"] != "python" {
		t.Fatalf("kernel model %v", m)
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000000Z", m["last_activity"].(string)); err != nil {
		t.Fatalf("last_activity %v: %v", m["last_activity"], err)
	}
	for _, p := range []string{"/api/kernels/" + kid, "/api/kernels/s-000000000000000000000001"} {
		if st, _ := h.do("alice", "GET", p, ""); st != 200 {
			t.Fatalf("GET %s: %d", p, st)
		}
	}
	if _, body := h.do("alice", "GET", "/api/kernels", ""); !strings.Contains(body, kid) {
		t.Fatalf("list %s", body)
	}
	if _, body := h.do("bob", "GET", "/api/kernels", ""); body != "[]\n" {
		t.Fatalf("bob's list %q", body)
	}
	for _, r := range [][2]string{{"GET", ""}, {"DELETE", ""}, {"POST", "/interrupt"}, {"POST", "/restart"}, {"GET", "/channels"}} {
		if st, _ := h.do("bob", r[0], "/api/kernels/"+kid+r[1], ""); st != 404 {
			t.Fatalf("bob %s %s: %d", r[0], r[1], st)
		}
	}
	if st, _ := h.do("alice", "POST", "/api/kernels/"+kid+"/interrupt", ""); st != 204 {
		t.Fatalf("interrupt: %d", st)
	}
	if st, _ := h.do("alice", "DELETE", "/api/kernels/"+kid, ""); st != 204 || len(h.f.closed) != 1 {
		t.Fatalf("delete: %d, closed %v", st, h.f.closed)
	}
	if st, _ := h.do("alice", "GET", "/kernelspecs/python/logo-64x64.png", ""); st != 404 {
		t.Fatalf("kernelspec resource: %d", st)
	}
}

// TestCull: a kernel idle past CullIdle is shut down, its connection
// closed; a busy one is not.
func TestCull(t *testing.T) {
	h := newHarness(t, Config{CullIdle: time.Hour})
	release := make(chan struct{})
	h.f.run = func(context.Context, Cell, core.Sink) (core.Result, error) {
		<-release
		return core.Result{Status: core.StatusOK}, nil
	}
	idleK, busyK := h.start("alice"), h.start("alice")
	c := h.dial("alice", idleK)
	b := h.dial("alice", busyK)
	b.send("shell", "execute_request", execReq("slow"))
	waitFor(t, func() bool { k := h.g.lookup("alice", sessionID(busyK)); busy, _, _ := k.state(); return busy })
	if n := h.g.cull(time.Now().Add(2 * time.Hour)); n != 1 {
		t.Fatalf("culled %d kernels, want 1", n)
	}
	close(release)
	if st, _ := h.do("alice", "GET", "/api/kernels/"+idleK, ""); st != 404 {
		t.Fatalf("culled kernel answers %d", st)
	}
	if st, _ := h.do("alice", "GET", "/api/kernels/"+busyK, ""); st != 200 {
		t.Fatalf("busy kernel answers %d", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Second))
	defer cancel()
	if _, _, err := c.ws.Read(ctx); err == nil || websocket.CloseStatus(err) == -1 && ctx.Err() != nil {
		t.Fatalf("the culled kernel's websocket is still open: %v", err)
	}
}

// TestParseMessage: JSON and binary frames; bad input is an error.
func TestParseMessage(t *testing.T) {
	js := []byte(`{"channel":"shell","header":{"msg_id":"1","msg_type":"execute_request","session":"s"},"content":{"code":"1"}}`)
	m, err := parseMessage(js, false)
	if err != nil || m.Header.MsgType != "execute_request" || string(m.Content) != `{"code":"1"}` {
		t.Fatalf("json: %+v %v", m, err)
	}
	buf := []byte("BUFFER")
	bin := make([]byte, 12)
	binary.BigEndian.PutUint32(bin[0:], 2)
	binary.BigEndian.PutUint32(bin[4:], 12)
	binary.BigEndian.PutUint32(bin[8:], uint32(12+len(js)))
	bin = append(append(bin, js...), buf...)
	if m, err := parseMessage(bin, true); err != nil || m.Header.MsgID != "1" {
		t.Fatalf("binary: %+v %v", m, err)
	}
	for _, bad := range []string{`nope`, `{"content":{}}`, `{"header":{"msg_id":"1"}}`} {
		if _, err := parseMessage([]byte(bad), false); err == nil {
			t.Fatalf("%s parsed", bad)
		}
	}
	if _, err := parseMessage([]byte{0, 0, 0, 9, 0, 0, 0, 1}, true); err == nil {
		t.Fatal("a binary frame with bad offsets parsed")
	}
}

// TestIDs: kernel ids are UUID-shaped session ids and map back.
func TestIDs(t *testing.T) {
	for s, k := range map[string]string{"s-0123456789abcdef01234567": "s-01234567-89ab-cdef-01234567", "other": "other", "s-xyz": "s-xyz"} {
		if got := kernelID(s); got != k {
			t.Fatalf("kernelID(%s) = %s", s, got)
		}
		if got := sessionID(k); got != s {
			t.Fatalf("sessionID(%s) = %s", k, got)
		}
	}
	if got := sessionID("s-0123456789abcdef01234567"); got != "s-0123456789abcdef01234567" {
		t.Fatalf("the plain form: %s", got)
	}
	if replyType("execute_request") != "execute_reply" || replyType("odd") != "odd_reply" {
		t.Fatal("replyType")
	}
}

// TestBounds: a message over MaxMessageBytes ends the connection (the
// kernel lives on); requests past MaxQueued behind a running cell are
// refused with an error reply, not queued without bound.
func TestBounds(t *testing.T) {
	h := newHarness(t, Config{MaxMessageBytes: 4096, MaxQueued: 2})
	release := make(chan struct{})
	h.f.run = func(_ context.Context, cell Cell, _ core.Sink) (core.Result, error) {
		if cell.Code == "block" {
			<-release
		}
		return core.Result{Status: core.StatusOK}, nil
	}
	kid := h.start("alice")
	c := h.dial("alice", kid)
	first := c.send("shell", "execute_request", execReq("block"))
	waitFor(t, func() bool { busy, _, _ := h.g.lookup("alice", sessionID(kid)).state(); return busy })
	var ids []string
	for range 4 {
		ids = append(ids, c.send("shell", "execute_request", execReq("queued")))
	}
	waitFor(t, func() bool {
		_, ms := c.of(ids[3])
		return content(ms, "execute_reply") != nil
	})
	for _, id := range ids[2:] {
		_, ms := c.of(id)
		if r := content(ms, "execute_reply"); r == nil || r["status"] != "error" || r["ename"] != "Busy" {
			t.Fatalf("request past the queue bound: %v", r)
		}
	}
	close(release)
	c.await(first)
	c.await(ids[1])

	big := c.send("shell", "execute_request", execReq(strings.Repeat("x", 8192)))
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Second))
	defer cancel()
	for {
		if err := c.ws.Ping(ctx); err != nil {
			break // the server closed the connection
		}
		if ctx.Err() != nil {
			t.Fatal("an over-limit message did not end the connection")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ms := c.of(big); len(ms) != 0 {
		t.Fatalf("the over-limit message was handled: %v", ms)
	}
	if st, _ := h.do("alice", "GET", "/api/kernels/"+kid, ""); st != 200 {
		t.Fatalf("the kernel after a dropped connection: %d", st)
	}
	h.dial("alice", kid) // and can be reached again
}
