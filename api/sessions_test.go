package api

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/sandbox"
)

// openSession opens a session as key and returns its id.
func (h *harness) openSession(key string) string {
	h.t.Helper()
	return h.do(key, "POST", "/v1/sessions", map[string]any{}).must(h.t, http.StatusCreated).JSON(h.t)["id"].(string)
}

func TestSessionLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	id := h.openSession(keyAlice)
	m := h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusOK).JSON(t)
	if m["id"] != id || m["created"] == nil || m["last_used"] == nil {
		t.Fatalf("session %v", m)
	}
	h.clock.Advance(time.Minute)
	m = h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", py("plot()")).must(t, http.StatusOK).JSON(t)
	if h.disp.lastCall().SessionID != id || m["result"].(map[string]any)["session_id"] != id {
		t.Fatalf("session not passed: %+v", h.disp.lastCall())
	}
	url := m["result"].(map[string]any)["artifacts"].([]any)[0].(map[string]any)["url"].(string)
	if !strings.HasPrefix(url, "/v1/sessions/"+id+"/artifacts/art_") {
		t.Fatalf("session artifact url %q", url)
	}
	if r := h.do(keyAlice, "GET", url, nil).must(t, http.StatusOK); !bytes.Equal(r.Body, pngBytes()) {
		t.Fatal("artifact bytes differ")
	}
	if h.do(keyAlice, "GET", "/v1/artifacts/"+url[strings.LastIndex(url, "/")+1:], nil).Code != http.StatusNotFound {
		t.Fatal("a session artifact must not be served under the one-shot route")
	}
	m = h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusOK).JSON(t)
	if m["last_used"] == m["created"] {
		t.Fatalf("last_used not updated: %v", m)
	}
	// The same call through /v1/tool-calls with session_id.
	body := py("print(1)")
	body["session_id"] = id
	h.do(keyAlice, "POST", "/v1/tool-calls", body).must(t, http.StatusOK)
	body["session_id"] = "other"
	h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", body).must(t, http.StatusBadRequest)

	h.do(keyAlice, "DELETE", "/v1/sessions/"+id, nil).must(t, http.StatusNoContent)
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusNotFound)
	h.do(keyAlice, "DELETE", "/v1/sessions/"+id, nil).must(t, http.StatusNotFound)
	h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", py("print(1)")).must(t, http.StatusNotFound)
	h.do(keyAlice, "GET", url, nil).must(t, http.StatusOK) // artifacts outlive the session until their TTL
}

func TestSessionOpenWithLimitsAndBadBodies(t *testing.T) {
	h := newHarness(t, nil)
	h.do(keyAlice, "POST", "/v1/sessions", nil).must(t, http.StatusCreated)
	h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"limits": map[string]any{"memory_bytes": 1 << 27}}).must(t, http.StatusCreated)
	h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"limits": map[string]any{"pids": 7}}).must(t, http.StatusBadRequest) // core.ErrInvalid
	h.do(keyAlice, "POST", "/v1/sessions", `{"limits":`).must(t, http.StatusBadRequest)
	h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"limits": map[string]any{"cpus": -1}}).must(t, http.StatusBadRequest)
}

func TestSessionBackendErrors(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   core.Code
	}{
		{core.ErrBusy, http.StatusTooManyRequests, core.ErrBusy},
		{core.ErrUnavailable, http.StatusServiceUnavailable, core.ErrUnavailable},
		{sandbox.ErrImageMissing, http.StatusServiceUnavailable, core.ErrUnavailable},
		{errors.New("disk on fire"), http.StatusInternalServerError, core.ErrInternal},
	}
	for _, c := range cases {
		h := newHarness(t, nil)
		h.sess.err = c.err
		r := h.do(keyAlice, "POST", "/v1/sessions", nil)
		if r.Code != c.status || r.errCode(t) != c.code {
			t.Errorf("%v: %d %s", c.err, r.Code, r.Body)
		}
		if strings.Contains(string(r.Body), "fire") {
			t.Errorf("internal error text leaked: %s", r.Body)
		}
		if c.status == http.StatusTooManyRequests && r.Header.Get("Retry-After") == "" {
			t.Error("busy without Retry-After")
		}
	}
	h := newHarness(t, func(c *Config, d *Deps) { d.Sessions = nil })
	h.do(keyAlice, "POST", "/v1/sessions", nil).must(t, http.StatusServiceUnavailable)
}

func TestSessionLostOrEndedDropsRecord(t *testing.T) {
	h := newHarness(t, nil)
	id := h.openSession(keyAlice)
	r := h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", py("lost")).must(t, http.StatusConflict)
	if r.errCode(t) != core.ErrSessionLost {
		t.Fatal(string(r.Body))
	}
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusNotFound)

	id = h.openSession(keyAlice)
	h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", py("gone")).must(t, http.StatusNotFound)
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusNotFound)

	id = h.openSession(keyAlice)
	m := h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", py("ended")).must(t, http.StatusOK).JSON(t)
	if m["result"].(map[string]any)["session_ended"] != true {
		t.Fatalf("%v", m)
	}
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusNotFound)
}

func TestSessionIdleRecordExpires(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { c.SessionIdleTTL = time.Hour })
	id := h.openSession(keyAlice)
	h.clock.Advance(59 * time.Minute)
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusOK)
	h.clock.Advance(2 * time.Minute)
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusNotFound)
}

func TestSessionFiles(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { c.MaxUploadBytes = 1 << 17 })
	id := h.openSession(keyAlice)
	csv := []byte("month,sales\njan,10\nfeb,20\n")
	m := h.do(keyAlice, "PUT", "/v1/sessions/"+id+"/files/data.csv", csv).must(t, http.StatusOK).JSON(t)
	if m["path"] != "data.csv" || m["size"] != float64(len(csv)) {
		t.Fatalf("%v", m)
	}
	r := h.do(keyAlice, "GET", "/v1/sessions/"+id+"/files/data.csv", nil).must(t, http.StatusOK)
	if !bytes.Equal(r.Body, csv) || r.Header.Get("Content-Type") != "application/octet-stream" ||
		!strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("download %v %q", r.Header, r.Body)
	}
	h.do(keyAlice, "PUT", "/v1/sessions/"+id+"/files/in/nested/x.txt", []byte("x")).must(t, http.StatusOK)
	if r := h.do(keyAlice, "GET", "/v1/sessions/"+id+"/files/in/nested/x.txt", nil).must(t, http.StatusOK); string(r.Body) != "x" {
		t.Fatal(string(r.Body))
	}
	for _, p := range []string{"../etc/passwd", "a/../../b", "a//b", "dir/", "./a"} {
		if r := h.do(keyAlice, "PUT", "/v1/sessions/"+id+"/files/"+p, []byte("x")); r.Code != http.StatusBadRequest {
			t.Errorf("%s: %d", p, r.Code)
		}
	}
	h.do(keyAlice, "PUT", "/v1/sessions/"+id+"/files/bad-link", []byte("x")).must(t, http.StatusBadRequest) // core.ErrInvalid
	h.do(keyAlice, "GET", "/v1/sessions/"+id+"/files/missing.csv", nil).must(t, http.StatusBadRequest)
	r = h.do(keyAlice, "PUT", "/v1/sessions/"+id+"/files/big.bin", bytes.Repeat([]byte("x"), 1<<16+1)).must(t, http.StatusRequestEntityTooLarge) // core.ErrTooLarge
	if r.errCode(t) != core.ErrTooLarge {
		t.Fatal(string(r.Body))
	}
	h.do(keyAlice, "PUT", "/v1/sessions/"+id+"/files/huge.bin", bytes.Repeat([]byte("x"), 1<<17+1)).must(t, http.StatusRequestEntityTooLarge) // MaxUploadBytes
	h.do(keyAlice, "PUT", "/v1/sessions/nope/files/a.csv", csv).must(t, http.StatusNotFound)

	// The backend forgot the session: 404 and the record goes.
	h.sess.mu.Lock()
	delete(h.sess.open, id)
	h.sess.mu.Unlock()
	h.do(keyAlice, "GET", "/v1/sessions/"+id+"/files/data.csv", nil).must(t, http.StatusNotFound)
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusNotFound)
}

func TestSessionCloseBackendFailure(t *testing.T) {
	h := newHarness(t, nil)
	id := h.openSession(keyAlice)
	h.sess.err = core.ErrUnavailable
	h.do(keyAlice, "DELETE", "/v1/sessions/"+id, nil).must(t, http.StatusServiceUnavailable)
	h.do(keyAlice, "PUT", "/v1/sessions/"+id+"/files/a.csv", []byte("x")).must(t, http.StatusServiceUnavailable)
	h.sess.err = nil
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusOK) // a failed close keeps the record
	h.do(keyAlice, "DELETE", "/v1/sessions/"+id, nil).must(t, http.StatusNoContent)
}

// TestSessionExpiryIsOneTruth checks that an expired session is 404 on GET
// as on tool calls and file routes from the same moment, by idle TTL and
// by maximum life, and that a call's end counts as use.
func TestSessionExpiryIsOneTruth(t *testing.T) {
	h := newHarness(t, func(c *Config, d *Deps) { c.SessionIdleTTL = time.Minute; c.SessionMaxLife = 10 * time.Minute })
	id := h.openSession(keyAlice)
	m := h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusOK).JSON(t)
	if m["expires_at"] != t0.Add(time.Minute).Format(time.RFC3339Nano) {
		t.Fatalf("expires_at %v, want %v", m["expires_at"], t0.Add(time.Minute))
	}
	h.clock.Advance(time.Minute)
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusNotFound)
	h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", py("x")).must(t, http.StatusNotFound)
	h.do(keyAlice, "PUT", "/v1/sessions/"+id+"/files/a.csv", []byte("x")).must(t, http.StatusNotFound)

	// Used every 50 s it lives until its maximum life, then every route says 404.
	id = h.openSession(keyAlice)
	for i := 0; i < 11; i++ {
		h.clock.Advance(50 * time.Second)
		h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", py("x")).must(t, http.StatusOK)
	}
	h.clock.Advance(50 * time.Second) // 600 s after opening
	h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, http.StatusNotFound)
	h.do(keyAlice, "POST", "/v1/tool-calls", map[string]any{"function": map[string]any{"name": "run_python", "arguments": `{"code":"1"}`}, "session_id": id}).must(t, http.StatusNotFound)
}
