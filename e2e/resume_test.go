package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/state"
)

// resumed is what a session call's answer says about a wake.
type resumed struct {
	Result struct {
		Status  string `json:"status"`
		Stdout  string `json:"stdout"`
		Resumed bool   `json:"resumed"`
		WakeMS  int64  `json:"wake_ms"`
	} `json:"result"`
}

// TestSessionsOutliveTheirWorker is issue 30 with real processes: Redis,
// `airlock serve --concurrency 0` and three `airlock worker`s. A session
// is saved after each call (off the caller's path); `kill -9` of the
// worker holding it: the call in flight answers session_lost, the next
// call restores the session from its last snapshot on another worker and
// says resumed, with its variables and files. Then SIGTERM of that worker:
// it saves the session before it exits, and the next call resumes it on
// the last worker with the state the killed-and-resumed session had since.
func TestSessionsOutliveTheirWorker(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	rs := redistest.Start(t, true)
	rdb := rs.Client(t)
	qname := fmt.Sprintf("e2eres%d", time.Now().UnixNano())
	keys := "airlock:{" + qname + "}:"
	srv := startServe(t, "--redis", rs.URL(), "--queue", qname, "--concurrency", "0")
	workers := map[int]*proc{}
	for i := 1; i <= 3; i++ {
		w := startProc(t, fmt.Sprintf("airlock worker %d", i), "worker", "--redis", rs.URL(), "--queue", qname,
			"--concurrency", "2", "--pool", "0", "--grace", "30s")
		workers[w.pid()] = w
	}
	for _, w := range workers {
		w.waitLog("worker started", startTimeout)
	}
	st := state.NewRedis(rdb, "airlock:state:")
	resumes := snapshots.NewResumes(st, snapshots.New(st, snapshots.DefaultConfig(), nil))
	sid, _ := do(t, "POST", srv.URL+"/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)["id"].(string)
	call := func(code string) resumed {
		t.Helper()
		r := do(t, "POST", srv.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{"code": code}))
		r.must(t, http.StatusOK)
		var out resumed
		if err := json.Unmarshal(r.Body, &out); err != nil || out.Result.Status != "ok" {
			t.Fatalf("call %q: %s", code, r.Body)
		}
		return out
	}
	holder := func() *proc {
		t.Helper()
		id, err := rdb.Get(context.Background(), keys+"sess:"+sid).Result()
		if err != nil {
			t.Fatalf("session %s is bound to no worker: %v", sid, err)
		}
		return workers[pidOfWorker(t, id)]
	}
	// savedWith waits for the session's automatic snapshot to name want.
	savedWith := func(want string) {
		t.Helper()
		poll(t, startTimeout, "the session's automatic snapshot", func() bool {
			r, err := resumes.Get(context.Background(), "local", sid)
			return err == nil && strings.Contains(strings.Join(mustNames(t, st, r), ","), want)
		})
	}

	call("import pandas as pd\ndf = pd.DataFrame({'a': range(1000)})\nx = 40")
	do(t, "PUT", srv.URL+"/v1/sessions/"+sid+"/files/note.txt", []byte("hello")).must(t, http.StatusOK)
	call("x += 2\ny = 'after'")
	savedWith("y")

	// kill -9 of the holder while a call runs: that call is lost (it may
	// have run); the next one resumes the session elsewhere.
	first := holder()
	inflight := sendAsync("POST", srv.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("call_inflight", "run_python",
		map[string]any{"code": "import time\ntime.sleep(600)", "timeout_seconds": 300}))
	time.Sleep(2 * time.Second)
	first.signal(syscall.SIGKILL)
	first.wait(stopTimeout)
	delete(workers, first.pid())
	a := <-inflight
	if a.err != nil || a.r.Status != http.StatusConflict || a.r.errCode(t) != "session_lost" {
		t.Fatalf("the call in flight at kill -9: %v %d %s, want 409 session_lost", a.err, a.r.Status, a.r.Body)
	}
	if r := do(t, "GET", srv.URL+"/v1/sessions/"+sid, nil).must(t, http.StatusOK).JSON(t); r["state"] != "hibernated" {
		t.Errorf("the session whose worker died is %v, want hibernated", r["state"])
	}
	out := call("print(x, y, len(df), open('note.txt').read())")
	if got := strings.TrimSpace(out.Result.Stdout); got != "42 after 1000 hello" || !out.Result.Resumed || out.Result.WakeMS <= 0 {
		t.Fatalf("the call after kill -9: %q resumed %v wake_ms %d, want \"42 after 1000 hello\" resumed", got, out.Result.Resumed, out.Result.WakeMS)
	}
	t.Logf("after kill -9 the session woke in %d ms", out.Result.WakeMS)
	second := holder()
	if second == nil || second == first {
		t.Fatalf("the session is on the killed worker still")
	}

	// SIGTERM of its new holder: it saves the session before it exits.
	call("x += 1")
	second.signal(syscall.SIGTERM)
	if code := second.wait(stopTimeout); code != 0 {
		t.Errorf("worker exited %d after SIGTERM", code)
	}
	if !strings.Contains(second.stderr.String(), "sessions saved") {
		t.Errorf("the worker did not say it saved its sessions:\n%s", tail(second.stderr.String(), 3000))
	}
	out = call("print(x, y)")
	if got := strings.TrimSpace(out.Result.Stdout); got != "43 after" || !out.Result.Resumed {
		t.Fatalf("the call after SIGTERM: %q resumed %v, want \"43 after\" resumed", got, out.Result.Resumed)
	}
	t.Logf("after SIGTERM the session woke in %d ms", out.Result.WakeMS)
	if again := call("print(x)"); again.Result.Resumed {
		t.Errorf("the call after the wake says resumed again")
	}
	do(t, "DELETE", srv.URL+"/v1/sessions/"+sid, nil).must(t, http.StatusNoContent)
	if _, err := resumes.Get(context.Background(), "local", sid); err == nil {
		t.Errorf("a closed session keeps its snapshot")
	}
}

// mustNames returns the names saved in r's snapshot.
func mustNames(t *testing.T, st state.Store, r snapshots.Resume) []string {
	t.Helper()
	m, err := snapshots.New(st, snapshots.DefaultConfig(), nil).Get(context.Background(), r.Owner, r.Snapshot)
	if err != nil {
		return nil
	}
	return m.Report.Names
}

// TestServeRestartKeepsSessions: `airlock serve` with its embedded worker
// and store saves its live sessions on SIGTERM; started again on the same
// data directory, the session's next call resumes it with its variables,
// and the session is listed as hibernated until then.
func TestServeRestartKeepsSessions(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	dir := t.TempDir()
	srv := startServe(t, "--data-dir", dir, "--pool", "0")
	sid, _ := do(t, "POST", srv.URL+"/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)["id"].(string)
	r := do(t, "POST", srv.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{"code": "z = 'kept across a restart'"}))
	decodeCall(t, r.must(t, http.StatusOK)).mustOK(t)
	srv.signal(syscall.SIGTERM)
	if code := srv.wait(stopTimeout); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM", code)
	}
	if !strings.Contains(srv.stderr.String(), "sessions saved") {
		t.Errorf("serve did not say it saved its sessions:\n%s", tail(srv.stderr.String(), 3000))
	}
	again := startServe(t, "--data-dir", dir, "--pool", "0")
	if v := do(t, "GET", again.URL+"/v1/sessions/"+sid, nil).must(t, http.StatusOK).JSON(t); v["state"] != "hibernated" {
		t.Errorf("after the restart the session is %v, want hibernated", v["state"])
	}
	// The CLI lists it the same way.
	list, err := exec.Command(airlockBin, "session", "list", "--server", again.URL).CombinedOutput()
	if err != nil || !strings.Contains(string(list), sid) || !strings.Contains(string(list), `"state": "hibernated"`) {
		t.Errorf("airlock session list: %v\n%s", err, list)
	}
	r = do(t, "POST", again.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{"code": "print(z)"}))
	var out resumed
	if err := json.Unmarshal(r.must(t, http.StatusOK).Body, &out); err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.Result.Stdout) != "kept across a restart" || !out.Result.Resumed {
		t.Fatalf("after the restart: %q resumed %v", out.Result.Stdout, out.Result.Resumed)
	}
	t.Logf("after a serve restart the session woke in %d ms", out.Result.WakeMS)
}
