package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// requireJupyter skips (fails in CI) without the Debian Jupyter packages.
func requireJupyter(t *testing.T, modules ...string) {
	t.Helper()
	for _, m := range modules {
		if err := exec.Command(debianPython, "-c", "import "+m).Run(); err != nil {
			missing(t, "python module %s is not installed for %s (scripts/deps.sh test installs it): %v", m, debianPython, err)
		}
	}
}

// keyed is a running `airlock serve` with API keys (no --insecure-local).
type keyed struct {
	*proc
	URL string
}

// startKeyedServe starts `airlock serve` with a keys file of lines and
// waits for /healthz.
func startKeyedServe(t *testing.T, lines []string, extra ...string) *keyed {
	t.Helper()
	kf := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(kf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := startProc(t, "airlock serve", append([]string{"serve", "--addr", addr, "--keys-file", kf}, extra...)...)
	s := &keyed{proc: p, URL: "http://" + addr}
	poll(t, startTimeout, "airlock serve to answer /healthz", func() bool {
		if p.exited() {
			t.Fatalf("airlock serve exited early:\n%s", tail(p.stderr.String(), 4000))
		}
		return healthy(s.URL)
	})
	return s
}

// jupyterServer is a running `jupyter server --gateway-url`.
type jupyterServer struct {
	URL   string
	Token string
}

// startJupyter starts Debian's `python3 -m module` (jupyter_server or
// notebook, whose options are prefixed app) on loopback with its root in
// a temporary folder, every kernel sent to gateway with key, and waits
// until its /api/status answers. It returns the server and its folder.
func startJupyter(t *testing.T, module, app, gateway, key string) (*jupyterServer, string) {
	t.Helper()
	dir := t.TempDir()
	port := freeAddr(t)[len("127.0.0.1:"):]
	j := &jupyterServer{URL: "http://127.0.0.1:" + port, Token: "jtok-" + fmt.Sprint(time.Now().UnixNano())}
	root := "root_dir"
	if app == "NotebookApp" {
		root = "notebook_dir"
	}
	cmd := exec.Command(debianPython, "-m", module, "--no-browser", "--allow-root", "--"+app+".ip=127.0.0.1",
		"--"+app+".port="+port, "--"+app+".port_retries=0", "--"+app+".token="+j.Token,
		"--"+app+"."+root+"="+dir, "--gateway-url="+gateway)
	cmd.Env = append(jupyterEnv(dir), "JUPYTER_GATEWAY_AUTH_TOKEN="+key)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", module, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("--- %s ---\n%s", module, tail(out.String(), 8000))
		}
	})
	poll(t, startTimeout, module+" to answer /api/status", func() bool {
		select {
		case <-done:
			t.Fatalf("%s exited early:\n%s", module, tail(out.String(), 4000))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := send(ctx, "GET", j.URL+"/api/status", nil, "Authorization", "token "+j.Token)
		return err == nil && r.Status == http.StatusOK
	})
	return j, dir
}

// writeNotebook writes an nbformat 4 notebook of code cells for kernelspec
// kernel to path.
func writeNotebook(t *testing.T, path, kernel string, cells ...string) {
	t.Helper()
	list := make([]any, len(cells))
	for i, src := range cells {
		list[i] = map[string]any{"cell_type": "code", "execution_count": nil, "metadata": map[string]any{}, "outputs": []any{}, "source": src}
	}
	raw, _ := json.Marshal(map[string]any{"nbformat": 4, "nbformat_minor": 4, "cells": list,
		"metadata": map[string]any{"kernelspec": map[string]any{"name": kernel, "display_name": kernel, "language": "python"}}})
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

// jupyterEnv is a clean environment for a Jupyter process whose config,
// data and runtime folders are under dir.
func jupyterEnv(dir string) []string {
	env := []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "LANG=C.UTF-8",
		"JUPYTER_CONFIG_DIR=" + filepath.Join(dir, ".jupyter"), "JUPYTER_DATA_DIR=" + filepath.Join(dir, ".data"),
		"JUPYTER_RUNTIME_DIR=" + filepath.Join(dir, ".runtime"), "JUPYTER_PLATFORM_DIRS=1", "IPYTHONDIR=" + filepath.Join(dir, ".ipython")}
	return env
}

// do sends a request to the jupyter server with its token.
func (j *jupyterServer) do(t *testing.T, method, path string, body any) response {
	t.Helper()
	return do(t, method, j.URL+path, body, "Authorization", "token "+j.Token)
}

// jmsg is a Jupyter message as a client sees it, with when it arrived.
type jmsg struct {
	Channel      string         `json:"channel"`
	Header       map[string]any `json:"header"`
	ParentHeader map[string]any `json:"parent_header"`
	Content      map[string]any `json:"content"`
	MsgType      string         `json:"msg_type"`
	at           time.Time
}

// typ is the message type from the header.
func (m jmsg) typ() string { s, _ := m.Header["msg_type"].(string); return s }

// parent is the msg_id of the message's parent.
func (m jmsg) parent() string { s, _ := m.ParentHeader["msg_id"].(string); return s }

// kernelWS is a websocket to a kernel's channels.
type kernelWS struct {
	t       *testing.T
	ws      *websocket.Conn
	session string
	mu      sync.Mutex
	msgs    map[string][]jmsg // by parent msg_id
	arrived chan struct{}
	n       int
}

// dialKernel opens url (ws://.../api/kernels/ID/channels) with auth.
func dialKernel(t *testing.T, url, auth string) *kernelWS {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	ws, res, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {auth}}})
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", url, err, status)
	}
	ws.SetReadLimit(64 << 20)
	k := &kernelWS{t: t, ws: ws, session: fmt.Sprint("test-", time.Now().UnixNano()), msgs: map[string][]jmsg{}, arrived: make(chan struct{}, 1)}
	go k.read()
	t.Cleanup(func() { _ = ws.CloseNow() })
	return k
}

// read collects every message.
func (k *kernelWS) read() {
	for {
		_, data, err := k.ws.Read(context.Background())
		if err != nil {
			return
		}
		var m jmsg
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		m.at = time.Now()
		k.mu.Lock()
		k.msgs[m.parent()] = append(k.msgs[m.parent()], m)
		k.mu.Unlock()
		select {
		case k.arrived <- struct{}{}:
		default:
		}
	}
}

// send writes a request on channel and returns its msg_id.
func (k *kernelWS) send(channel, msgType string, content map[string]any) string {
	k.t.Helper()
	k.n++
	id := fmt.Sprintf("%s-%d", k.session, k.n)
	msg := map[string]any{
		"channel":       channel,
		"header":        map[string]any{"msg_id": id, "msg_type": msgType, "session": k.session, "username": "test", "date": time.Now().UTC().Format(time.RFC3339Nano), "version": "5.3"},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "content": content, "buffers": []any{},
	}
	data, _ := json.Marshal(msg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := k.ws.Write(ctx, websocket.MessageText, data); err != nil {
		k.t.Fatalf("write %s: %v", msgType, err)
	}
	return id
}

// of returns the messages whose parent is id, in arrival order.
func (k *kernelWS) of(id string) []jmsg {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]jmsg(nil), k.msgs[id]...)
}

// wait waits (at most d) until cond holds for the messages of id.
func (k *kernelWS) wait(id string, d time.Duration, what string, cond func([]jmsg) bool) []jmsg {
	k.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ms := k.of(id)
		if cond(ms) {
			return ms
		}
		left := time.Until(deadline)
		if left <= 0 {
			k.t.Fatalf("gave up after %s waiting for %s; got %s", d, what, summary(ms))
		}
		select {
		case <-k.arrived:
		case <-time.After(min(left, 200*time.Millisecond)):
		}
	}
}

// ready sends kernel_info_request every second until one is answered, as
// jupyter_client's wait_for_ready does (jupyter_server 1.23 drops a
// message that arrives before its own websocket to the gateway is being
// opened), and returns the reply's content.
func (k *kernelWS) ready(d time.Duration) map[string]any {
	k.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		id := k.send("shell", "kernel_info_request", map[string]any{})
		end := time.Now().Add(time.Second)
		for time.Now().Before(end) {
			if r := find(k.of(id), "kernel_info_reply"); r != nil {
				return r.Content
			}
			select {
			case <-k.arrived:
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	k.t.Fatalf("no kernel_info_reply within %s", d)
	return nil
}

// idle reports whether ms holds the status idle that ends a request.
func idle(ms []jmsg) bool {
	for _, m := range ms {
		if m.typ() == "status" && m.Content["execution_state"] == "idle" {
			return true
		}
	}
	return false
}

// has reports whether ms holds a message of type typ.
func has(ms []jmsg, typ string) bool { return find(ms, typ) != nil }

// find returns the first message of type typ.
func find(ms []jmsg, typ string) *jmsg {
	for i := range ms {
		if ms[i].typ() == typ {
			return &ms[i]
		}
	}
	return nil
}

// summary lists message types for failure messages.
func summary(ms []jmsg) string {
	var parts []string
	for _, m := range ms {
		s := m.Channel + ":" + m.typ()
		switch m.typ() {
		case "status":
			s += "(" + fmt.Sprint(m.Content["execution_state"]) + ")"
		case "stream":
			s += fmt.Sprintf("(%q)", m.Content["text"])
		case "error", "execute_reply":
			s += fmt.Sprintf("(%v %v %v)", m.Content["status"], m.Content["ename"], m.Content["evalue"])
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// execute runs code and waits for its reply and idle; it checks the
// order Jupyter clients rely on: busy first, then execute_input, the
// outputs, execute_reply, and idle last.
func (k *kernelWS) execute(code string, allowStdin bool) []jmsg {
	k.t.Helper()
	id := k.send("shell", "execute_request", map[string]any{"code": code, "silent": false, "store_history": true,
		"user_expressions": map[string]any{}, "allow_stdin": allowStdin, "stop_on_error": true})
	ms := k.wait(id, testscale.D(90*time.Second), "execute_reply and idle of "+code, func(ms []jmsg) bool { return idle(ms) && has(ms, "execute_reply") })
	checkOrder(k.t, ms)
	return ms
}

// checkOrder asserts busy → execute_input → outputs → execute_reply → idle.
func checkOrder(t *testing.T, ms []jmsg) {
	t.Helper()
	if len(ms) < 3 || ms[0].typ() != "status" || ms[0].Content["execution_state"] != "busy" {
		t.Fatalf("the first message of a request is not status busy: %s", summary(ms))
	}
	last := ms[len(ms)-1]
	if last.typ() != "status" || last.Content["execution_state"] != "idle" {
		t.Fatalf("the last message of a request is not status idle: %s", summary(ms))
	}
	if ms[len(ms)-2].typ() != "execute_reply" {
		t.Fatalf("execute_reply does not come right before idle: %s", summary(ms))
	}
	if ms[1].typ() != "execute_input" {
		t.Fatalf("execute_input does not follow busy: %s", summary(ms))
	}
	for _, m := range ms {
		if m.Header["session"] == "" || m.Header["msg_id"] == "" || m.ParentHeader["session"] == nil {
			t.Fatalf("a message without session, msg_id or parent session: %+v", m)
		}
	}
}

// reply returns the execute_reply of ms.
func reply(t *testing.T, ms []jmsg) map[string]any {
	t.Helper()
	r := find(ms, "execute_reply")
	if r == nil {
		t.Fatalf("no execute_reply: %s", summary(ms))
	}
	return r.Content
}

// stdout joins the stdout stream text of ms.
func stdout(ms []jmsg) string {
	var b strings.Builder
	for _, m := range ms {
		if m.typ() == "stream" && m.Content["name"] == "stdout" {
			b.WriteString(fmt.Sprint(m.Content["text"]))
		}
	}
	return b.String()
}
