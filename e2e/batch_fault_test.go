package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
)

// faultItems is the size of each fault batch; every item sleeps a little
// so the fault lands while most items are still to run.
const faultItems = 40

// faultJSONL is a JSONL batch of faultItems small Python items (forked
// in the owner's warm container) printing their own name.
func faultJSONL() []byte {
	var b strings.Builder
	for i := 0; i < faultItems; i++ {
		args := mustJSON(map[string]string{"code": fmt.Sprintf("import time\ntime.sleep(0.3)\nprint('item-%d')", i)})
		fmt.Fprintf(&b, `{"custom_id":"item-%d","tool_call":{"type":"function","function":{"name":"run_python","arguments":%s}}}`+"\n", i, mustJSON(args))
	}
	return []byte(b.String())
}

// faultTimings are the fault tests' queue visibility timeout and batch
// lease: short, so a killed worker's jobs and a killed replica's batch are
// taken over in seconds (the defaults, 30 s and 15 s, made these tests
// wait most of their two minutes); scaled, so a heartbeat late on a busy
// machine does not hand work over needlessly.
func faultTimings() []string {
	return []string{"--visibility-timeout", testscale.D(5 * time.Second).String()}
}

// faultSetup starts a Redis with appendonly yes and returns it with a
// fresh queue name.
func faultSetup(t *testing.T) (*redistest.Server, string) {
	t.Helper()
	requireDocker(t)
	return redistest.Start(t, true), fmt.Sprintf("e2ebf%d", time.Now().UnixNano())
}

// startFaultServe starts `airlock serve` driving batches on the queue.
func startFaultServe(t *testing.T, redisURL, qname string) *server {
	t.Helper()
	args := append([]string{"--redis", redisURL, "--queue", qname, "--concurrency", "0",
		"--batch-lease", testscale.D(3 * time.Second).String()}, faultTimings()...)
	return startServe(t, args...)
}

// startFaultWorker starts `airlock worker` on the queue.
func startFaultWorker(t *testing.T, name, redisURL, qname string) *proc {
	t.Helper()
	args := append([]string{"worker", "--redis", redisURL, "--queue", qname, "--concurrency", "2", "--pool", "1"}, faultTimings()...)
	w := startProc(t, name, args...)
	w.waitLog("worker started", startTimeout)
	return w
}

// submitFault submits the fault batch on s and returns its id.
func submitFault(t *testing.T, s *server) string {
	t.Helper()
	r := do(t, "POST", s.URL+"/v1/batches?concurrency=4", faultJSONL(), "Content-Type", "application/jsonl").must(t, 201)
	return r.JSON(t)["id"].(string)
}

// waitResults waits until the batch has at least n result lines and
// fails if it has already ended (the fault would not land mid-batch).
func waitResults(t *testing.T, base, id string, n int) int {
	t.Helper()
	got := 0
	poll(t, testscale.D(3*time.Minute), fmt.Sprintf("%d results of %s", n, id), func() bool {
		got = len(results(t, base+"/v1/batches/"+id+"/results"))
		return got >= n
	})
	if got >= faultItems {
		t.Fatalf("the batch finished before the fault; make its items slower")
	}
	return got
}

// checkExactlyOnce checks a finished fault batch through base: completed,
// counts exact, one ok result line per item with its own output; in the
// store's raw results log exactly one line per item (the results view
// dedups, the log does not); on the events stream exactly one item event
// per item, dense ids, and Last-Event-ID resuming after an id.
func checkExactlyOnce(t *testing.T, base string, redis *redistest.Server, id string) {
	t.Helper()
	b := waitBatch(t, base, id, testscale.D(4*time.Minute), "completed", "failed", "expired", "cancelled")
	if b["status"] != "completed" {
		t.Fatalf("batch ended %v: %v", b["status"], b)
	}
	if tot, ok, bad := counts(b); tot != faultItems || ok != faultItems || bad != 0 {
		t.Errorf("request_counts %d/%d/%d, want %d completed", tot, ok, bad, faultItems)
	}
	lines := results(t, base+"/v1/batches/"+id+"/results")
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l.CustomID] {
			t.Errorf("duplicate result line for %s", l.CustomID)
		}
		seen[l.CustomID] = true
		if l.Status != "ok" || l.Stdout != l.CustomID+"\n" {
			t.Errorf("%s: status %s stdout %q stderr %q", l.CustomID, l.Status, l.Stdout, l.Stderr)
		}
	}
	if len(seen) != faultItems {
		t.Errorf("%d distinct result lines, want %d", len(seen), faultItems)
	}

	// The raw results log in the shared store (kind "batchres", owner
	// "local" under --insecure-local, keys under serve's "airlock:state:").
	rs := state.NewRedis(redis.Client(t), "airlock:state:")
	es, err := rs.Range(context.Background(), state.Key{Kind: "batchres", Owner: "local", ID: id}, 0, 10*faultItems, 0)
	if err != nil {
		t.Fatalf("read the results log: %v", err)
	}
	raw := map[string]int{}
	for _, e := range es {
		var l batchLine
		if err := json.Unmarshal(e.Data, &l); err != nil {
			t.Fatalf("log entry %s: %v", e.Data, err)
		}
		raw[l.CustomID]++
	}
	if len(es) != faultItems || len(raw) != faultItems {
		t.Errorf("the results log has %d lines for %d items, want exactly %d", len(es), len(raw), faultItems)
	}
	for id, n := range raw {
		if n != 1 {
			t.Errorf("%s has %d lines in the results log", id, n)
		}
	}

	ids, items := readBatchEvents(t, base, id, 0)
	for i, n := range ids {
		if n != int64(i+1) {
			t.Fatalf("event ids not dense from 1: %v", ids)
		}
	}
	if len(items) != faultItems {
		t.Errorf("item events for %d items, want %d", len(items), faultItems)
	}
	for cid, n := range items {
		if n != 1 {
			t.Errorf("%s has %d item events", cid, n)
		}
	}
	after := ids[len(ids)/2]
	resumed, _ := readBatchEvents(t, base, id, after)
	if len(resumed) != len(ids)-int(after) || resumed[0] != after+1 {
		t.Errorf("Last-Event-ID %d resumed with %d events from %v, want %d from %d", after, len(resumed), resumed[:1], len(ids)-int(after), after+1)
	}
}

// readBatchEvents reads the whole events stream of a finished batch after
// Last-Event-ID after: the ids in order and the item events per custom_id.
func readBatchEvents(t *testing.T, base, id string, after int64) ([]int64, map[string]int) {
	t.Helper()
	r := do(t, "GET", base+"/v1/batches/"+id+"/events", nil, "Last-Event-ID", strconv.FormatInt(after, 10)).must(t, 200)
	var ids []int64
	items := map[string]int{}
	kind := ""
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			n, _ := strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			ids = append(ids, n)
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && kind == "item":
			var ev struct {
				CustomID   string `json:"custom_id"`
				Status     string `json:"status"`
				DurationMS int64  `json:"duration_ms"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil || ev.CustomID == "" || ev.Status != "ok" || ev.DurationMS <= 0 {
				t.Errorf("item event %q (%v)", line, err)
			}
			items[ev.CustomID]++
		}
	}
	if !strings.Contains(string(r.Body), "event: done") {
		t.Errorf("the events stream of a finished batch did not end with done: %.300s", r.Body)
	}
	return ids, items
}

// TestBatchSurvivesServeKill: kill -9 of the serve replica driving a
// batch mid-batch; the other replica takes the batch over when its lease
// expires and completes it with exactly one result per item.
func TestBatchSurvivesServeKill(t *testing.T) {
	t.Parallel()
	rs, qname := faultSetup(t)
	start := time.Now()
	a := startFaultServe(t, rs.URL(), qname)
	startFaultWorker(t, "airlock worker", rs.URL(), qname)
	id := submitFault(t, a) // only A runs: it holds the batch's lease
	b := startFaultServe(t, rs.URL(), qname)
	n := waitResults(t, b.URL, id, 8)
	a.proc.signal(syscall.SIGKILL)
	a.proc.wait(testscale.D(10 * time.Second))
	killed := time.Now()
	t.Logf("killed the driving replica with %d of %d results", n, faultItems)
	checkExactlyOnce(t, b.URL, rs, id)
	t.Logf("completed %s after the kill; test %s", time.Since(killed).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// TestBatchSurvivesWorkerKill: kill -9 of one of two workers mid-batch;
// its jobs go to the other worker and the batch completes exactly once.
func TestBatchSurvivesWorkerKill(t *testing.T) {
	t.Parallel()
	rs, qname := faultSetup(t)
	start := time.Now()
	s := startFaultServe(t, rs.URL(), qname)
	w1 := startFaultWorker(t, "airlock worker 1", rs.URL(), qname)
	startFaultWorker(t, "airlock worker 2", rs.URL(), qname)
	id := submitFault(t, s)
	n := waitResults(t, s.URL, id, 8)
	w1.signal(syscall.SIGKILL)
	w1.wait(testscale.D(10 * time.Second))
	killed := time.Now()
	t.Logf("killed worker 1 with %d of %d results", n, faultItems)
	checkExactlyOnce(t, s.URL, rs, id)
	t.Logf("completed %s after the kill; test %s", time.Since(killed).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// TestBatchSurvivesRedisRestart: Redis (appendonly yes) restarts
// mid-batch; serve and the worker reconnect and the batch completes
// exactly once.
func TestBatchSurvivesRedisRestart(t *testing.T) {
	t.Parallel()
	rs, qname := faultSetup(t)
	start := time.Now()
	s := startFaultServe(t, rs.URL(), qname)
	startFaultWorker(t, "airlock worker", rs.URL(), qname)
	id := submitFault(t, s)
	n := waitResults(t, s.URL, id, 8)
	rs.Restart(2 * time.Second)
	restarted := time.Now()
	t.Logf("restarted Redis with %d of %d results", n, faultItems)
	checkExactlyOnce(t, s.URL, rs, id)
	t.Logf("completed %s after the restart; test %s", time.Since(restarted).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
