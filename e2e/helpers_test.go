package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// Hang guards: they bound waits (the few bounds a test asserts on how long
// something took are its own, also from testscale).
var (
	startTimeout = testscale.D(2 * time.Minute) // a process comes up and answers
	stopTimeout  = testscale.D(2 * time.Minute) // a process exits after SIGTERM
	callTimeout  = testscale.D(5 * time.Minute) // one HTTP request
)

// syncBuffer is a bytes.Buffer safe for a writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is one airlock process started by a test, in its own process group.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{}
	err    error // from Wait, valid once done is closed
}

// startProc starts `airlock args...` with a clean environment. At the end
// of the test the whole process group is stopped (SIGTERM, then SIGKILL)
// and, if the test failed, the process's output is logged.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, done: make(chan struct{})}
	p.cmd = exec.Command(airlockBin, args...)
	// Each process gets its own embedded state directory (serve without
	// --redis locks it); a test sharing one passes --data-dir.
	p.cmd.Env = append(childEnv(), "AIRLOCK_DATA_DIR="+t.TempDir())
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		began := time.Now()
		if p.stop(testscale.D(30*time.Second)) || time.Since(began) > 5*time.Second {
			// A slow stop is test time spent on nothing: say so, so the
			// test that causes it (a call left in flight?) can be found.
			t.Logf("stopping %s (pid %d) took %s", name, p.pid(), time.Since(began).Round(100*time.Millisecond))
		}
		if t.Failed() {
			out := p.stderr.String()
			if w := notable(out); w != "" {
				t.Logf("--- %s (pid %d) stderr, lines above INFO ---\n%s", name, p.pid(), tail(w, 6000))
			}
			t.Logf("--- %s (pid %d) stderr ---\n%s", name, p.pid(), tail(out, 6000))
		}
	})
	return p
}

// childEnv is this process's environment without the variables that would
// change how airlock is wired (queue, keys, model); image and runtime
// choices are kept.
func childEnv() []string {
	keep := map[string]bool{"AIRLOCK_PYTHON_IMAGE": true, "AIRLOCK_SHELL_IMAGE": true, "AIRLOCK_RUNTIME": true}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if (strings.HasPrefix(k, "AIRLOCK_") || strings.HasPrefix(k, "OPENAI_")) && !keep[k] {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// pid is the process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group.
func (p *proc) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = syscall.Kill(-p.pid(), sig)
	}
}

// wait waits up to d for the process to end and returns its exit code;
// it fails the test if the process is still running.
func (p *proc) wait(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(d):
		p.t.Fatalf("%s (pid %d) still running after %s", p.name, p.pid(), d)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		p.t.Fatalf("%s: %v", p.name, p.err)
	}
	return 0
}

// stop ends the process group: SIGTERM, then SIGKILL after grace. It
// reports whether the grace ran out.
func (p *proc) stop(grace time.Duration) (killed bool) {
	if p.exited() {
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL) // stray children, if any
		return false
	}
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
		_ = syscall.Kill(-p.pid(), syscall.SIGKILL)
		<-p.done
		return true
	}
}

// waitLog waits until the process's stderr contains s.
func (p *proc) waitLog(s string, d time.Duration) {
	p.t.Helper()
	poll(p.t, d, fmt.Sprintf("%s to log %q", p.name, s), func() bool {
		if p.exited() {
			p.t.Fatalf("%s exited before logging %q:\n%s", p.name, s, tail(p.stderr.String(), 4000))
		}
		return strings.Contains(p.stderr.String(), s)
	})
}

// tail returns the last n bytes of s.
// notable is the lines of a process's log that are not INFO or DEBUG
// records: the warnings and errors a failure is looked for in.
func notable(log string) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		if l != "" && !strings.Contains(l, "level=INFO") && !strings.Contains(l, "level=DEBUG") {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// poll calls cond until it is true, failing the test after d.
func poll(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// server is a running `airlock serve`.
type server struct {
	*proc
	URL string
}

// startServe starts `airlock serve --insecure-local --addr ADDR extra...`
// and waits until /healthz answers. A port taken between freeAddr and the
// server's listen is retried on another port.
func startServe(t *testing.T, extra ...string) *server {
	t.Helper()
	for attempt := 1; ; attempt++ {
		addr := freeAddr(t)
		p := startProc(t, "airlock serve", append([]string{"serve", "--insecure-local", "--addr", addr}, extra...)...)
		s := &server{proc: p, URL: "http://" + addr}
		up := false
		poll(t, startTimeout, "airlock serve to answer /healthz", func() bool {
			if p.exited() {
				return true
			}
			up = healthy(s.URL)
			return up
		})
		if up {
			return s
		}
		if attempt < 3 && strings.Contains(p.stderr.String(), "address already in use") {
			continue
		}
		t.Fatalf("airlock serve exited early:\n%s", tail(p.stderr.String(), 4000))
	}
}

// healthy reports whether GET base/healthz answers 200.
func healthy(base string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	res.Body.Close()
	return res.StatusCode == http.StatusOK
}

// response is a finished HTTP answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body as a JSON object.
func (r response) JSON(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object (%v): %.500s", err, r.Body)
	}
	return m
}

// must fails the test unless the status is want.
func (r response) must(t *testing.T, want int) response {
	t.Helper()
	if r.Status != want {
		t.Fatalf("HTTP %d, want %d: %.1000s", r.Status, want, r.Body)
	}
	return r
}

// errCode is the code of an {"error": {...}} body.
func (r response) errCode(t *testing.T) string {
	t.Helper()
	e, _ := r.JSON(t)["error"].(map[string]any)
	code, _ := e["code"].(string)
	if code == "" {
		t.Fatalf("no error code in %.500s", r.Body)
	}
	return code
}

// request is one HTTP request: body is nil, a string or []byte (sent as
// is) or any other value (sent as JSON); hdr are name/value pairs.
func request(ctx context.Context, method, url string, body any, hdr ...string) (*http.Request, error) {
	var raw []byte
	ct := ""
	switch b := body.(type) {
	case nil:
	case string:
		raw, ct = []byte(b), "application/json"
	case []byte:
		raw, ct = b, "application/octet-stream"
	default:
		var err error
		if raw, err = json.Marshal(b); err != nil {
			return nil, err
		}
		ct = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return req, nil
}

// do sends a request and reads the whole answer, failing the test on a
// transport error (a hang ends at callTimeout).
func do(t *testing.T, method, url string, body any, hdr ...string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := send(ctx, method, url, body, hdr...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return res
}

// answer is a finished HTTP exchange, or its transport error.
type answer struct {
	r   response
	err error
}

// sendAsync sends a request in a goroutine, bounded by callTimeout; its
// answer arrives on the returned channel.
func sendAsync(method, url string, body any, hdr ...string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		r, err := send(ctx, method, url, body, hdr...)
		ch <- answer{r, err}
	}()
	return ch
}

// send is do without a test: the error is returned.
func send(ctx context.Context, method, url string, body any, hdr ...string) (response, error) {
	req, err := request(ctx, method, url, body, hdr...)
	if err != nil {
		return response{}, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: b}, nil
}

// toolCall is the body of a tool call request for tool with args.
func toolCall(id, tool string, args map[string]any) map[string]any {
	b, _ := json.Marshal(args)
	return map[string]any{"id": id, "type": "function", "function": map[string]any{"name": tool, "arguments": string(b)}}
}

// callResult is the part of a 200 tool call answer the tests read.
type callResult struct {
	Message struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		Content    string `json:"content"`
	} `json:"message"`
	Result struct {
		ToolCallID string `json:"tool_call_id"`
		Status     string `json:"status"`
		ExitCode   *int   `json:"exit_code"`
		Stdout     string `json:"stdout"`
		Stderr     string `json:"stderr"`
		Artifacts  []struct {
			Name string `json:"name"`
			MIME string `json:"mime"`
			Size int64  `json:"size"`
			URL  string `json:"url"`
		} `json:"artifacts"`
	} `json:"result"`
}

// decodeCall decodes a 200 tool call answer.
func decodeCall(t *testing.T, r response) callResult {
	t.Helper()
	r.must(t, http.StatusOK)
	var c callResult
	if err := json.Unmarshal(r.Body, &c); err != nil {
		t.Fatalf("tool call answer: %v: %.500s", err, r.Body)
	}
	return c
}

// mustOK fails the test unless a tool call succeeded; it returns stdout.
func (c callResult) mustOK(t *testing.T) string {
	t.Helper()
	if c.Result.Status != "ok" {
		t.Fatalf("tool call status %q, want ok: stdout %q stderr %q content %q", c.Result.Status, c.Result.Stdout, c.Result.Stderr, c.Message.Content)
	}
	return c.Result.Stdout
}

// containers lists Airlock's containers created by the process pid
// (running or not), by their labels.
func containers(t *testing.T, dc *client.Client, pid int) []container.Summary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
	defer cancel()
	list, err := dc.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", "airlock.managed=true"),
		filters.Arg("label", "airlock.pid="+strconv.Itoa(pid)),
	)})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return list
}

// containerIDs is the set of ids in list.
func containerIDs(list []container.Summary) map[string]bool {
	ids := map[string]bool{}
	for _, c := range list {
		ids[c.ID] = true
	}
	return ids
}

// describe summarises containers for a failure message.
func describe(list []container.Summary) string {
	var parts []string
	for _, c := range list {
		parts = append(parts, fmt.Sprintf("%.12s %s kind=%s %s", c.ID, c.Image, c.Labels["airlock.kind"], c.State))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// running lists the running Airlock containers of process pid.
func running(t *testing.T, dc *client.Client, pid int) []container.Summary {
	t.Helper()
	var out []container.Summary
	for _, c := range containers(t, dc, pid) {
		if c.State == "running" {
			out = append(out, c)
		}
	}
	return out
}
