package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// poolSize is the workers' warm pool (set explicitly: the cancellation
// check counts containers).
const poolSize = 2

// workerPID matches the pid in a worker ID (host-PID-random).
var workerPID = regexp.MustCompile(`-(\d+)-[0-9a-f]+$`)

// pidOfWorker returns the process id named by a worker ID.
func pidOfWorker(t *testing.T, id string) int {
	t.Helper()
	m := workerPID.FindStringSubmatch(id)
	if m == nil {
		t.Fatalf("worker id %q does not carry a pid", id)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestRedisDeployment is issue 5's deployment path with real processes:
// redis-server, `airlock serve --redis --concurrency 0` and two
// `airlock worker`s. One-shot calls are shared by both workers; a
// session's calls go to the worker holding it (state survives);
// `kill -9` of that worker turns the call in flight into 409
// session_lost instead of a hang, and the next call restores the session
// from its last snapshot (issue 30); a caller that goes away gets its running
// container killed; the dead worker's container is reaped; SIGTERM leaves
// no container behind.
func TestRedisDeployment(t *testing.T) {
	t.Parallel()
	dc := requireDocker(t)
	rs := redistest.Start(t, true)
	rdb := rs.Client(t)
	qname := fmt.Sprintf("e2e%d", time.Now().UnixNano())
	keys := "airlock:{" + qname + "}:"

	srv := startServe(t, "--redis", rs.URL(), "--queue", qname, "--concurrency", "0")
	workers := map[int]*proc{}
	for i := 1; i <= 2; i++ {
		w := startProc(t, fmt.Sprintf("airlock worker %d", i), "worker", "--redis", rs.URL(), "--queue", qname,
			"--concurrency", "2", "--pool", strconv.Itoa(poolSize), "--grace", "30s")
		workers[w.pid()] = w
	}
	for _, w := range workers {
		w.waitLog("worker started", startTimeout)
	}
	// A worker writes its liveness key a moment after it logs "worker
	// started": wait for /readyz to see them.
	poll(t, startTimeout, "/readyz 200 with the workers live", func() bool {
		return do(t, "GET", srv.URL+"/readyz", nil).Status == http.StatusOK
	})
	ready := do(t, "GET", srv.URL+"/readyz", nil).must(t, http.StatusOK).JSON(t)
	if checks, _ := ready["checks"].(map[string]any); checks["queue"] != "ok" {
		t.Errorf("/readyz %v", ready)
	}

	// One-shot calls through the API, several at once: all succeed, and
	// both workers take some (each holds at most two, and every call
	// sleeps, so neither can drain the queue alone).
	const calls = 6
	var wg sync.WaitGroup
	outs := make([]callResult, calls)
	resps := make([]response, calls)
	for i := range calls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			resps[i], _ = send(ctx, "POST", srv.URL+"/v1/tool-calls", toolCall(fmt.Sprintf("call_%d", i), "run_python",
				map[string]any{"code": fmt.Sprintf("import time\ntime.sleep(2)\nprint(%d * 7)", i)}))
		})
	}
	wg.Wait()
	for i := range calls {
		if resps[i].Status == 0 {
			t.Fatalf("call %d got no answer", i)
		}
		outs[i] = decodeCall(t, resps[i])
		if got := outs[i].mustOK(t); got != fmt.Sprintf("%d\n", i*7) {
			t.Errorf("call %d printed %q", i, got)
		}
	}
	ran := map[int]int{} // worker pid → jobs
	for k, o := range outcomes(t, rdb, keys) {
		if o.by == "" {
			t.Fatalf("job %s has no worker: %+v", k, o)
		}
		ran[pidOfWorker(t, o.by)]++
	}
	total := 0
	for pid, n := range ran {
		if workers[pid] == nil {
			t.Errorf("a job ran on unknown worker pid %d", pid)
		}
		total += n
	}
	if total != calls || len(ran) != 2 {
		t.Errorf("jobs per worker pid %v: want %d jobs over both workers", ran, calls)
	}

	// A session lives on one worker; its calls go there and keep state.
	beforeSession := outcomes(t, rdb, keys)
	sid, _ := do(t, "POST", srv.URL+"/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)["id"].(string)
	holderID, err := rdb.Get(context.Background(), keys+"sess:"+sid).Result()
	if err != nil {
		t.Fatalf("session %s is bound to no worker: %v", sid, err)
	}
	holderPID := pidOfWorker(t, holderID)
	holder := workers[holderPID]
	if holder == nil {
		t.Fatalf("session held by unknown worker %s", holderID)
	}
	var survivor *proc
	for pid, w := range workers {
		if pid != holderPID {
			survivor = w
		}
	}
	if n := len(running(t, dc, holderPID)); n == 0 {
		t.Fatalf("the holder runs no container")
	}
	sessCall := func(code string) response {
		t.Helper()
		return do(t, "POST", srv.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("", "run_python", map[string]any{"code": code}))
	}
	decodeCall(t, sessCall("x = 40")).mustOK(t)
	do(t, "PUT", srv.URL+"/v1/sessions/"+sid+"/files/note.txt", []byte("hello")).must(t, http.StatusOK)
	for i := 0; i < 3; i++ {
		want := fmt.Sprintf("%d hello\n", 41+i)
		if got := decodeCall(t, sessCall("x += 1\nprint(x, open('note.txt').read())")).mustOK(t); got != want {
			t.Fatalf("session call %d printed %q, want %q (state lost or call on another worker?)", i, got, want)
		}
	}
	if got := do(t, "GET", srv.URL+"/v1/sessions/"+sid+"/files/note.txt", nil).must(t, http.StatusOK).Body; string(got) != "hello" {
		t.Errorf("file read back %q", got)
	}
	// Every job of the session (open, calls, put, get) ran on the holder.
	sessJobs := 0
	for k, o := range outcomes(t, rdb, keys) {
		if _, old := beforeSession[k]; old {
			continue
		}
		sessJobs++
		if o.by != holderID {
			t.Errorf("session job %s ran on %q, not on the holder %s", k, o.by, holderID)
		}
	}
	if sessJobs < 6 {
		t.Errorf("%d jobs of the session found in Redis, want at least 6 (3 calls, a put, a get, and more)", sessJobs)
	}

	// kill -9 of the holder while a session call runs: that call is 409
	// session_lost within seconds (the worker's pulse subscription went
	// with its process), not after the 30 s liveness TTL and two checks
	// (43 s in issue 26); the next call is refused too, not a hang.
	inflight := sendAsync("POST", srv.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("call_inflight", "run_python",
		map[string]any{"code": "import time\ntime.sleep(600)", "timeout_seconds": 300}))
	time.Sleep(2 * time.Second) // the call is running (or queued for the holder: lost all the same)
	holder.signal(syscall.SIGKILL)
	holder.wait(stopTimeout)
	killedAt := time.Now()
	var a answer
	select {
	case a = <-inflight:
	case <-time.After(callTimeout):
		t.Fatal("the session call in flight at kill -9 of its worker never answered")
	}
	took := time.Since(killedAt)
	if a.err != nil {
		t.Fatalf("the session call in flight at kill -9 of its worker: %v", a.err)
	}
	if a.r.Status != http.StatusConflict || a.r.errCode(t) != "session_lost" {
		t.Fatalf("the session call in flight at kill -9: %d %s, want 409 session_lost", a.r.Status, a.r.Body)
	}
	t.Logf("the call in flight learned session_lost %s after kill -9 of its worker", took.Round(100*time.Millisecond))
	// About 4 s to notice (the pulse checks), the rest slack for the load.
	if bound := 4*time.Second + testscale.D(6*time.Second); took > bound {
		t.Errorf("session_lost reached the call in flight %s after the kill, want within %s", took, bound)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	lost, err := send(ctx, "POST", srv.URL+"/v1/sessions/"+sid+"/tool-calls", toolCall("call_lost", "run_python", map[string]any{"code": "print(x)"}))
	cancel()
	if err != nil {
		t.Fatalf("session call after kill -9 of its worker did not answer: %v", err)
	}
	// The session was saved after its last call (issue 30): the next call
	// restores it on the survivor instead of answering session_lost.
	if got := decodeCall(t, lost.must(t, http.StatusOK)).mustOK(t); got != "43\n" {
		t.Fatalf("session call after the loss printed %q, want 43 (restored from its last snapshot)", got)
	}
	// The survivor still serves one-shot calls.
	if got := decodeCall(t, do(t, "POST", srv.URL+"/v1/tool-calls", toolCall("", "run_python", map[string]any{"code": "print('alive')"}))).mustOK(t); got != "alive\n" {
		t.Errorf("call after the kill printed %q", got)
	}

	// A caller that gives up: the container running its job is removed
	// (an abandoned one-shot container is never handed on). The job runs
	// on a container that existed (the owner's idle one, or a generic one
	// whose refill then starts) or on a fresh one; either way one of the
	// containers seen while it runs is gone after the hang-up. Wait for the
	// generic pool first, so the count is settled.
	survivorPID := survivor.pid()
	poll(t, startTimeout, "the survivor's warm pool to fill", func() bool { return len(running(t, dc, survivorPID)) >= poolSize })
	callCtx, hangUp := context.WithCancel(context.Background())
	callErr := make(chan error, 1)
	go func() {
		r, err := send(callCtx, "POST", srv.URL+"/v1/tool-calls", toolCall("call_sleep", "run_python",
			map[string]any{"code": "import time\ntime.sleep(600)", "timeout_seconds": 300}))
		if err == nil {
			err = fmt.Errorf("answered %d %s", r.Status, r.Body)
		}
		callErr <- err
	}()
	time.Sleep(3 * time.Second) // the call is running
	select {
	case err := <-callErr:
		t.Fatalf("the sleeping call ended before it was cancelled: %v", err)
	default:
	}
	during := containerIDs(running(t, dc, survivorPID))
	hangUp()
	cancelledAt := time.Now()
	select {
	case err := <-callErr:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: %v", err)
		}
	case <-time.After(testscale.D(time.Minute)):
		t.Fatal("the cancelled HTTP call did not return")
	}
	poll(t, testscale.D(2*time.Minute), "the cancelled call's container to be removed", func() bool {
		now := containerIDs(containers(t, dc, survivorPID))
		for id := range during {
			if !now[id] {
				return true
			}
		}
		return false
	})
	t.Logf("the cancelled call's container was removed %s after the hang-up (not asserted)", time.Since(cancelledAt).Round(100*time.Millisecond))
	poll(t, startTimeout, "the survivor to be back to its idle pool", func() bool { return len(running(t, dc, survivorPID)) >= poolSize })
	if n := countState(t, rdb, keys, "canceled"); n != 1 {
		t.Errorf("%d jobs are marked canceled in Redis, want 1", n)
	}

	// A session on the survivor, open at shutdown.
	sid2, _ := do(t, "POST", srv.URL+"/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)["id"].(string)
	if got := decodeCall(t, do(t, "POST", srv.URL+"/v1/sessions/"+sid2+"/tool-calls", toolCall("", "run_python", map[string]any{"code": "print('second')"}))).mustOK(t); got != "second\n" {
		t.Errorf("second session printed %q", got)
	}

	// The dead worker's session container is a leftover: a reaper removes
	// it (the survivor's runs every minute; any airlock engine starting on
	// this host also removes containers of dead processes).
	poll(t, testscale.D(3*time.Minute), "the killed worker's session container to be reaped", func() bool {
		return len(containers(t, dc, holderPID)) == 0
	})

	// SIGTERM everything: clean exits, and no container of ours remains.
	srv.signal(syscall.SIGTERM)
	survivor.signal(syscall.SIGTERM)
	for _, p := range []*proc{srv.proc, survivor} {
		if code := p.wait(stopTimeout); code != 0 {
			t.Errorf("%s exited %d after SIGTERM", p.name, code)
		}
	}
	if !strings.Contains(survivor.stderr.String(), "worker stopped") {
		t.Errorf("the worker did not log a clean stop")
	}
	for deadline := time.Now().Add(stopTimeout); ; time.Sleep(time.Second) {
		left := ""
		for _, pid := range []int{srv.pid(), survivorPID, holderPID} {
			if l := containers(t, dc, pid); len(l) > 0 {
				left += fmt.Sprintf("pid %d: %s ", pid, describe(l))
			}
		}
		if left == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("containers left after SIGTERM: %s", left)
		}
	}
}

// scanKeys returns the keys matching pattern.
func scanKeys(t *testing.T, rdb *redis.Client, pattern string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	var keys []string
	iter := rdb.Scan(ctx, 0, pattern, 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("scan %s: %v", pattern, err)
	}
	return keys
}

// outcome is one job's stored outcome, as the queue keeps it under
// <keys>res:<id>: "<state>:<len(msg)>:<msg><len(by)>:<by><out>".
type outcome struct{ state, by string }

// outcomes reads every stored job outcome of the queue with key prefix keys.
func outcomes(t *testing.T, rdb *redis.Client, keys string) map[string]outcome {
	t.Helper()
	m := map[string]outcome{}
	counted := func(s string) (string, string, bool) {
		n, rest, ok := strings.Cut(s, ":")
		l, err := strconv.Atoi(n)
		if !ok || err != nil || l < 0 || l > len(rest) {
			return "", "", false
		}
		return rest[:l], rest[l:], true
	}
	for _, k := range scanKeys(t, rdb, keys+"res:*") {
		v, err := rdb.Get(context.Background(), k).Result()
		if err != nil {
			continue // expired meanwhile
		}
		st, rest, ok := strings.Cut(v, ":")
		_, rest, ok2 := counted(rest)
		by, _, ok3 := counted(rest)
		if !ok || !ok2 || !ok3 {
			t.Fatalf("outcome %s malformed: %.60q", k, v)
		}
		m[k] = outcome{state: st, by: by}
	}
	return m
}

// countState counts the stored job outcomes whose state is st.
func countState(t *testing.T, rdb *redis.Client, keys, st string) int {
	t.Helper()
	n := 0
	for _, o := range outcomes(t, rdb, keys) {
		if o.state == st {
			n++
		}
	}
	return n
}
