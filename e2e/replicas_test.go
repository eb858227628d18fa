package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestStatelessReplicas is issue 13's stateless replicas with real
// processes: two `airlock serve --redis` replicas and one worker on one
// real Redis; a session's requests alternate between the replicas (open on
// A, upload on B, call on A, list on B, download on A), then the replica
// that served the last request is killed with -9 and the session goes on
// through the other, which finally deletes it.
func TestStatelessReplicas(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	rs := redistest.Start(t, true)
	qname := fmt.Sprintf("e2erep%d", time.Now().UnixNano())
	a := startServe(t, "--redis", rs.URL(), "--queue", qname, "--concurrency", "0")
	b := startServe(t, "--redis", rs.URL(), "--queue", qname, "--concurrency", "0")
	w := startProc(t, "airlock worker", "worker", "--redis", rs.URL(), "--queue", qname, "--concurrency", "2", "--pool", "1")
	w.waitLog("worker started", startTimeout)
	for _, s := range []*server{a, b} {
		ready := do(t, "GET", s.URL+"/readyz", nil).must(t, http.StatusOK).JSON(t)
		if checks, _ := ready["checks"].(map[string]any); checks["state"] != "ok" {
			t.Errorf("/readyz of %s: %v", s.URL, ready)
		}
	}

	sid, _ := do(t, "POST", a.URL+"/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)["id"].(string)
	do(t, "GET", b.URL+"/v1/sessions/"+sid, nil).must(t, http.StatusOK)
	do(t, "PUT", b.URL+"/v1/sessions/"+sid+"/files/in.txt", []byte("hello from B\n")).must(t, http.StatusOK)
	call := func(s *server, id, code string) string {
		t.Helper()
		r := do(t, "POST", s.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall(id, "run_python", map[string]any{"code": code}))
		return decodeCall(t, r.must(t, http.StatusOK)).mustOK(t)
	}
	if got := call(a, "c1", "x = open('in.txt').read().strip()\nopen('out.txt','w').write(x.upper())\nprint(x)"); got != "hello from B\n" {
		t.Errorf("call on A printed %q", got)
	}
	list := do(t, "GET", b.URL+"/v1/sessions", nil).must(t, http.StatusOK)
	if !strings.Contains(string(list.Body), sid) {
		t.Errorf("B's list misses session %s made on A: %s", sid, list.Body)
	}
	if got := string(do(t, "GET", a.URL+"/v1/sessions/"+sid+"/files/out.txt", nil).must(t, http.StatusOK).Body); got != "HELLO FROM B" {
		t.Errorf("download on A: %q", got)
	}

	// Idempotency: the same key through A then B (a retry on another replica) runs the code once and
	// answers the same body; the key with another body is 409.
	appendOnce := toolCall("c3", "run_python", map[string]any{"code": "open('log.txt','a').write('run\\n')\nprint('appended')"})
	first := do(t, "POST", a.URL+"/v1/sessions/"+sid+"/tool-calls", appendOnce, "Idempotency-Key", "idem-1").must(t, http.StatusOK)
	again := do(t, "POST", b.URL+"/v1/sessions/"+sid+"/tool-calls", appendOnce, "Idempotency-Key", "idem-1").must(t, http.StatusOK)
	if string(first.Body) != string(again.Body) {
		t.Errorf("retry answered another body:\n%s\n%s", first.Body, again.Body)
	}
	other := toolCall("c4", "run_python", map[string]any{"code": "print(2)"})
	if r := do(t, "POST", b.URL+"/v1/sessions/"+sid+"/tool-calls", other, "Idempotency-Key", "idem-1"); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "idem-1") {
		t.Errorf("same key, other body: %d %s", r.Status, r.Body)
	}
	if got := call(b, "c5", "print(len(open('log.txt').readlines()))"); got != "1\n" {
		t.Errorf("the idempotent call ran %q times, want 1", got)
	}
	// An artifact made through A downloads through B.
	url, size := plotCall(t, a)
	mustPNG(t, b.URL, url, size)
	if got := string(do(t, "GET", a.URL+"/v1/sessions/"+sid+"/files/out.txt", nil).must(t, http.StatusOK).Body); got != "HELLO FROM B" {
		t.Errorf("download on A: %q", got)
	}

	// A served the last request: kill it; the session goes on through B,
	// with its Python state intact.
	a.proc.signal(syscall.SIGKILL)
	a.proc.wait(testscale.D(10 * time.Second))
	if got := call(b, "c2", "print(x * 2)"); got != "hello from Bhello from B\n" {
		t.Errorf("call on B after A died printed %q", got)
	}
	do(t, "DELETE", b.URL+"/v1/sessions/"+sid, nil).must(t, http.StatusNoContent)
	do(t, "GET", b.URL+"/v1/sessions/"+sid, nil).must(t, http.StatusNotFound)
}

// plotCall makes a one-shot plot on s and returns its artifact's URL and size.
func plotCall(t *testing.T, s *server) (string, int64) {
	t.Helper()
	c := decodeCall(t, do(t, "POST", s.URL+"/v1/tool-calls", toolCall("call_plot", "run_python", map[string]any{
		"code": "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.show()",
		// The first import of matplotlib beside the rest of the suite: not the default 10 s.
		"timeout_seconds": 60})))
	c.mustOK(t)
	if len(c.Result.Artifacts) != 1 || c.Result.Artifacts[0].URL == "" {
		t.Fatalf("plot artifacts %+v", c.Result.Artifacts)
	}
	return c.Result.Artifacts[0].URL, c.Result.Artifacts[0].Size
}

// mustPNG fails unless GET base+url serves the size-byte PNG.
func mustPNG(t *testing.T, base, url string, size int64) {
	t.Helper()
	png := do(t, "GET", base+url, nil).must(t, http.StatusOK)
	if !strings.HasPrefix(string(png.Body), "\x89PNG\r\n\x1a\n") || int64(len(png.Body)) != size {
		t.Errorf("GET %s%s: not the %d-byte PNG: %d bytes", base, url, size, len(png.Body))
	}
}

// TestEmbeddedRestartKeepsArtifacts: embedded `airlock serve` (no Redis)
// keeps its state in a Bolt file under --data-dir, so an artifact made
// before a restart is still downloadable after it.
func TestEmbeddedRestartKeepsArtifacts(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	dir := t.TempDir()
	s1 := startServe(t, "--data-dir", dir, "--pool", "1")
	url, size := plotCall(t, s1)
	mustPNG(t, s1.URL, url, size)
	s1.proc.signal(syscall.SIGTERM)
	s1.proc.wait(testscale.D(60 * time.Second))
	s2 := startServe(t, "--data-dir", dir, "--pool", "1")
	mustPNG(t, s2.URL, url, size)
}
