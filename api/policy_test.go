package api

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/keys"
)

// policyHarness serves alice with a keys-file policy granting more memory,
// 2 sessions and background work, and bob with none.
func policyHarness(t *testing.T) *harness {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	lines := "# keys\nalice:" + keyAlice + " memory_bytes=1g cpus=2 max_sessions=2 session_memory_bytes=1536m background=true\nbob:" + keyBob + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := keys.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	return newHarness(t, func(c *Config, _ *Deps) { c.Keys = ks })
}

func TestLimitsAreCeilings(t *testing.T) {
	h := policyHarness(t)
	call := func(key string, limits map[string]any) response {
		return h.do(key, "POST", "/v1/tool-calls", map[string]any{"type": "function",
			"function": map[string]any{"name": "run_python", "arguments": `{"code":"print(1)"}`}, "limits": limits})
	}
	// bob has no policy: the server defaults are his ceiling
	res := call(keyBob, map[string]any{"memory_bytes": 2 << 30, "cpus": 2, "pids": 512, "tmpfs_bytes": 1 << 30})
	if res.Code != 400 || !strings.Contains(string(res.Body), "memory_bytes 2147483648 is over 268435456") ||
		!strings.Contains(string(res.Body), "cpus 2 is over 1") || !strings.Contains(string(res.Body), "keys file") {
		t.Fatalf("bob over the defaults: %d %s", res.Code, res.Body)
	}
	call(keyBob, map[string]any{"memory_bytes": 128 << 20}).must(t, 200)
	if got := h.disp.lastCall(); got.Limits.Memory != 128<<20 || got.Ceiling.Memory != 256<<20 {
		t.Fatalf("bob's call: %+v ceiling %+v", got.Limits, got.Ceiling)
	}
	// alice's policy grants 1 GiB and 2 CPUs, not more
	call(keyAlice, map[string]any{"memory_bytes": 1 << 30, "cpus": 2}).must(t, 200)
	if got := h.disp.lastCall(); got.Ceiling.Memory != 1<<30 || got.Ceiling.CPUs != 2 || got.Ceiling.Pids != 128 {
		t.Fatalf("alice's ceiling: %+v", got.Ceiling)
	}
	call(keyAlice, map[string]any{"memory_bytes": 2 << 30}).must(t, 400)
	call(keyAlice, map[string]any{"pids": 129}).must(t, 400)
}

func TestSessionBudgets(t *testing.T) {
	h := policyHarness(t)
	open := func(key string, limits map[string]any) response {
		if limits == nil {
			limits = map[string]any{}
		}
		return h.do(key, "POST", "/v1/sessions", map[string]any{"limits": limits})
	}
	// alice: 2 sessions, 1.5 GiB of session memory
	open(keyAlice, map[string]any{"memory_bytes": 1 << 30}).must(t, http.StatusCreated)
	res := open(keyAlice, map[string]any{"memory_bytes": 1 << 30})
	if res.Code != 429 || res.errCode(t) != "quota" || !strings.Contains(string(res.Body), "session_memory_bytes") {
		t.Fatalf("alice over her memory budget: %d %s", res.Code, res.Body)
	}
	open(keyAlice, nil).must(t, http.StatusCreated) // 256 MiB default fits
	res = open(keyAlice, map[string]any{"memory_bytes": 16 << 20})
	if res.Code != 429 || !strings.Contains(string(res.Body), "budget sessions") {
		t.Fatalf("alice over her session count: %d %s", res.Code, res.Body)
	}
	// bob: server budget, 4 sessions, 4 CPUs; alice's sessions are not his
	for range 4 {
		open(keyBob, nil).must(t, http.StatusCreated)
	}
	res = open(keyBob, nil)
	if res.Code != 429 || res.errCode(t) != "quota" || !strings.Contains(string(res.Body), "budget sessions") {
		t.Fatalf("bob's fifth session: %d %s", res.Code, res.Body)
	}
}

func TestBackgroundSessionsNeedPolicy(t *testing.T) {
	h := policyHarness(t)
	res := h.do(keyBob, "POST", "/v1/sessions", map[string]any{"background": true})
	if res.Code != 400 || !strings.Contains(string(res.Body), "background=true") {
		t.Fatalf("bob without the policy: %d %s", res.Code, res.Body)
	}
	res = h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"background": true}).must(t, http.StatusCreated)
	id, _ := res.JSON(t)["id"].(string)
	if bg, _ := res.JSON(t)["background"].(bool); !bg || !h.sess.bg[id] {
		t.Fatalf("background not recorded or not passed to the backend: %s", res.Body)
	}
	if got := h.do(keyAlice, "GET", "/v1/sessions/"+id, nil).must(t, 200).JSON(t)["background"]; got != true {
		t.Fatalf("GET shows background %v", got)
	}
	h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", map[string]any{"type": "function",
		"function": map[string]any{"name": "run_python", "arguments": `{"code":"print(1)"}`}}).must(t, 200)
	if !h.disp.lastCall().Background {
		t.Fatal("session call not marked background")
	}
	plain := h.do(keyAlice, "POST", "/v1/sessions", map[string]any{}).must(t, http.StatusCreated)
	if got := plain.JSON(t)["background"]; got != false {
		t.Fatalf("plain session shows background %v", got)
	}
}

// TestInputFolderNamedNeverPath: a missing input folder is refused by its
// name; the host path appears nowhere in the answer.
func TestInputFolderNamedNeverPath(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone", "secret-host-path")
	h := newHarness(t, func(c *Config, _ *Deps) { c.InputFolders["lost"] = missing })
	res := h.do(keyAlice, "POST", "/v1/tool-calls", map[string]any{"type": "function", "input": "lost",
		"function": map[string]any{"name": "run_python", "arguments": `{"code":"1"}`}})
	if res.Code != 400 || !strings.Contains(string(res.Body), "input folder lost is not available") {
		t.Fatalf("got %d %s", res.Code, res.Body)
	}
	if strings.Contains(string(res.Body), "secret-host-path") || strings.Contains(string(res.Body), missing) {
		t.Fatalf("host path leaked: %s", res.Body)
	}
	res = h.do(keyAlice, "POST", "/v1/runs", map[string]any{"goal": "g", "input": "lost"})
	if res.Code != 400 || strings.Contains(string(res.Body), "secret-host-path") {
		t.Fatalf("run: %d %s", res.Code, res.Body)
	}
}

// TestSessionCallTimeoutUpToTheSession: a session opened without limits
// gets the session call timeout (2 min by default) as its per-call limit;
// a call in it may then name up to that limit, although bob's one-shot
// ceiling is 10 s, and not more.
func TestSessionCallTimeoutUpToTheSession(t *testing.T) {
	h := policyHarness(t)
	res := h.do(keyBob, "POST", "/v1/sessions", map[string]any{})
	res.must(t, 201)
	id := res.JSON(t)["id"].(string)
	call := func(sec float64) response {
		return h.do(keyBob, "POST", "/v1/sessions/"+id+"/tool-calls", map[string]any{"type": "function",
			"function": map[string]any{"name": "run_python", "arguments": `{"code":"print(1)"}`},
			"limits":   map[string]any{"timeout_seconds": sec}})
	}
	call(60).must(t, 200)
	if got := h.disp.lastCall(); got.Limits.Timeout.Seconds() != 60 || got.Ceiling.Timeout.Seconds() != 120 {
		t.Fatalf("session call of 60 s: limits %+v ceiling %+v", got.Limits, got.Ceiling)
	}
	if res := call(180); res.Code != 400 || !strings.Contains(string(res.Body), "timeout_seconds 180 is over 120") {
		t.Fatalf("session call of 180 s: %d %s", res.Code, res.Body)
	}
	oneShot := h.do(keyBob, "POST", "/v1/tool-calls", map[string]any{"type": "function",
		"function": map[string]any{"name": "run_python", "arguments": `{"code":"print(1)"}`},
		"limits":   map[string]any{"timeout_seconds": 60}})
	if oneShot.Code != 400 {
		t.Fatalf("one-shot call of 60 s: %d %s, want bob's 10 s ceiling", oneShot.Code, oneShot.Body)
	}
}
