package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
	"github.com/prometheus/client_golang/prometheus"
)

// sectionState is issue 13's bench: the same warm session call (print(1)
// in a session, real Docker) through two API servers built as `serve`
// builds them, over one sandbox engine, in-process queue and dispatcher,
// that differ only in their state store: the embedded Bolt store, a Redis
// store (a private redis-server on loopback) and, as the baseline, the
// in-memory store. Calls rotate between them; it reports p50/p95 of each,
// the differences, and the state store operations per call.
func sectionState(ctx context.Context, o options, q *quieter, rep *report) error {
	reg := prometheus.NewRegistry()
	eng, _, err := startEngine(ctx, o, 0, reg)
	if err != nil {
		return err
	}
	defer closeEngine(eng)
	mq, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		return err
	}
	defer mq.Close()
	w, err := mq.NewWorker(queue.WorkerConfig{Concurrency: 2}, jobs.NewRunner(eng))
	if err != nil {
		return err
	}
	wctx, stopWorker := context.WithCancel(ctx)
	wdone := make(chan struct{})
	go func() { defer close(wdone); _ = w.Run(wctx) }()
	defer func() { stopWorker(); <-wdone }()
	client := jobs.NewClient(mq, jobs.ClientConfig{DefaultTimeout: 30 * time.Second})
	dcfg := dispatcher.DefaultConfig()
	dcfg.Ceiling = sandbox.DefaultConfig().Defaults
	disp := dispatcher.New(dcfg, client, nil)

	dir, err := os.MkdirTemp(o.workdir, "state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bolt, err := state.OpenBolt(filepath.Join(dir, "state.db"))
	if err != nil {
		return err
	}
	defer bolt.Close()
	boltSync, err := state.OpenBolt(filepath.Join(dir, "state-sync.db"))
	if err != nil {
		return err
	}
	defer boltSync.Close()
	rs, err := startRedis(ctx, o.workdir)
	if err != nil {
		return err
	}
	defer rs.close()
	rdb, err := queue.NewRedisClient(rs.url, 2*time.Second)
	if err != nil {
		return err
	}
	defer rdb.Close()

	var vs []*variant
	var stores []*countingStore
	for _, b := range []struct {
		name string
		st   state.Store
	}{{"embedded (Bolt)", bolt}, {"Redis", state.NewRedis(rdb, "bench:")}, {"memory (baseline, not durable)", state.NewMemory(nil)},
		{"embedded (Bolt), every touch synced (before issue 33)", syncedStore{boltSync}}} {
		cs := &countingStore{Store: b.st}
		base, stop, err := serveState(ctx, disp, client, cs)
		if err != nil {
			return err
		}
		defer stop()
		sid, err := openSession(ctx, base)
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		defer closeSession(base, sid)
		v := &variant{s: &series{name: b.name}, run: func(ctx context.Context) error { return sessionPrint(ctx, base, sid) }}
		if err := v.run(ctx); err != nil { // warm-up: the session's first call
			return fmt.Errorf("%s: warm-up call: %w", b.name, err)
		}
		vs, stores = append(vs, v), append(stores, cs)
	}
	rounds := 3 * o.n
	for _, cs := range stores {
		cs.ops.Store(0)
	}
	logf("section 9: warm session print(1), embedded vs Redis vs memory state store, %d interleaved rounds", rounds)
	pause := func(ctx context.Context) error { // an agent's pace, not a quiet machine: see the note
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
			return nil
		}
	}
	phases0 := gatherPhases(reg)
	if err := interleave(ctx, q, rounds, vs, pause); err != nil {
		return err
	}
	phases := phaseCells(phases0, gatherPhases(reg), "session")
	t := &table{title: "9. State store — warm session call print(1) (POST /v1/sessions/{id}/tool-calls), embedded vs Redis vs memory",
		head: []string{"state store", "calls", "p50", "p95", "p99", "max", "store ops per call", "failed"}}
	for i, v := range vs {
		perCall := "—"
		if n := len(v.s.d) + v.s.failed; n > 0 {
			perCall = fmt.Sprintf("%.1f", float64(stores[i].ops.Load())/float64(n))
		}
		t.row(v.s.name, fmt.Sprint(len(v.s.d)), ms(v.s.pct(50)), ms(v.s.pct(95)), ms(v.s.pct(99)), ms(v.s.max()), perCall, v.s.failures())
	}
	bolt0, redis0, mem0, sync0 := vs[0].s, vs[1].s, vs[2].s, vs[3].s
	rep.figureMS("session print(1) via REST, embedded store, p50", bolt0.pct(50))
	rep.figureMS("session print(1) via REST, embedded store, p99", bolt0.pct(99))
	rep.figureMS("same, every touch synced (before), p50", sync0.pct(50))
	t.note("Embedded, touches lazy (state.PutOptions.Lazy, committed within 1 s) against every touch synced: p50 %s vs %s (%s), p99 %s vs %s (issue 33's goal: p50 ≤ 2 ms, p99 ≤ 5 ms).",
		ms(bolt0.pct(50)), ms(sync0.pct(50)), ratio(sync0.pct(50), bolt0.pct(50)), ms(bolt0.pct(99)), ms(sync0.pct(99)))
	t.note("Inside the engine, mean per session call of all four (`airlock_sandbox_call_phase_seconds`): begin %s, run %s, teardown %s, relay %s; the rest of a call's time is the HTTP server, API, dispatcher, queue and worker around it.",
		phases[0], phases[1], phases[2], phases[3])
	t.note("Redis − memory: p50 %s, p95 %s, median paired difference %s (issue 13's goal: the state store adds ≤ 1 ms p50 through Redis). Redis − embedded: p50 %s, p95 %s, median paired difference %s.",
		signedMS(redis0.pct(50)-mem0.pct(50)), signedMS(redis0.pct(95)-mem0.pct(95)), signedMS(pairedDiff(redis0, mem0)),
		signedMS(redis0.pct(50)-bolt0.pct(50)), signedMS(redis0.pct(95)-bolt0.pct(95)), signedMS(pairedDiff(redis0, bolt0)))
	t.note("The three servers are api.New with the same in-process engine, queue, worker and dispatcher (as `airlock serve` wires them without --redis), so the state store is the only difference; each has its own session. Calls alternate between them, 100 ms apart (an agent's pace; the machine is not waited quiet, so both series see the same background load).")
	t.note("Store ops: every state.Store method call the API made during the rounds (session lookup and touches), divided by the calls. The embedded store is Bolt on this machine's disk (each write an fsync'd transaction); Redis is a private redis-server on loopback with AOF on.")
	rep.table(t)
	return paceTable(ctx, rounds, vs[0], rep)
}

// pairedDiff is the median of a's round-by-round differences from b
// (interleave runs both once a round).
func pairedDiff(a, b *series) time.Duration {
	if len(a.d) != len(b.d) || len(a.d) == 0 {
		return 0
	}
	diffs := make([]time.Duration, len(a.d))
	for i := range a.d {
		diffs[i] = a.d[i] - b.d[i]
	}
	return percentile(diffs, 50)
}

// syncedStore is a store whose lazy writes are made ordinary ones: the
// embedded store as it was before issue 33, every session touch synced.
type syncedStore struct{ state.Store }

// Put forwards without Lazy.
func (s syncedStore) Put(ctx context.Context, k state.Key, v []byte, o state.PutOptions) (int64, error) {
	o.Lazy = false
	return s.Store.Put(ctx, k, v, o)
}

// countingStore counts the state store operations made through it.
type countingStore struct {
	state.Store
	ops atomic.Int64
}

// Put counts and forwards.
func (c *countingStore) Put(ctx context.Context, k state.Key, v []byte, o state.PutOptions) (int64, error) {
	c.ops.Add(1)
	return c.Store.Put(ctx, k, v, o)
}

// Get counts and forwards.
func (c *countingStore) Get(ctx context.Context, k state.Key) (state.Item, error) {
	c.ops.Add(1)
	return c.Store.Get(ctx, k)
}

// Delete counts and forwards.
func (c *countingStore) Delete(ctx context.Context, k state.Key, v int64) error {
	c.ops.Add(1)
	return c.Store.Delete(ctx, k, v)
}

// List counts and forwards.
func (c *countingStore) List(ctx context.Context, kind, owner, after string, limit int) ([]state.Item, error) {
	c.ops.Add(1)
	return c.Store.List(ctx, kind, owner, after, limit)
}

// Append counts and forwards.
func (c *countingStore) Append(ctx context.Context, k state.Key, d []byte, maxLen int, ttl time.Duration) (int64, error) {
	c.ops.Add(1)
	return c.Store.Append(ctx, k, d, maxLen, ttl)
}

// Range counts and forwards.
func (c *countingStore) Range(ctx context.Context, k state.Key, after int64, limit int, wait time.Duration) ([]state.Entry, error) {
	c.ops.Add(1)
	return c.Store.Range(ctx, k, after, limit, wait)
}

// Add counts and forwards.
func (c *countingStore) Add(ctx context.Context, k state.Key, delta, limit int64, ttl time.Duration) (int64, error) {
	c.ops.Add(1)
	return c.Store.Add(ctx, k, delta, limit, ttl)
}

// benchDispatcher adapts the dispatcher to api.Dispatcher.
type benchDispatcher struct{ *dispatcher.Dispatcher }

// ToolsJSON is the registry as an OpenAI tools array.
func (d benchDispatcher) ToolsJSON() []map[string]any { return d.Registry().OpenAIToolsJSON() }

// benchSessions adapts the jobs client to sessions.Backend (api.Deps.Sessions).
type benchSessions struct{ *jobs.Client }

// Open opens a session on the worker.
func (s benchSessions) Open(ctx context.Context, owner string, limits core.Limits, background bool) (string, error) {
	return s.OpenSessionOpts(ctx, owner, limits, background)
}

// Close destroys a session.
func (s benchSessions) Close(ctx context.Context, owner, id string) error {
	return s.CloseSession(ctx, owner, id)
}

// serveState starts an insecure-local API server over st on a loopback
// port and returns its base URL and a stop function.
func serveState(ctx context.Context, disp *dispatcher.Dispatcher, client *jobs.Client, st state.Store) (string, func(), error) {
	srv, err := api.New(api.Config{InsecureLocal: true, RatePerSecond: -1},
		api.Deps{Dispatcher: benchDispatcher{disp}, Sessions: benchSessions{client}, State: st})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(sctx, ln) }()
	return "http://" + ln.Addr().String(), func() { cancel(); <-done }, nil
}

// openSession opens a session and returns its id.
func openSession(ctx context.Context, base string) (string, error) {
	var out struct {
		ID string `json:"id"`
	}
	if err := postJSON(ctx, base+"/v1/sessions", `{}`, &out); err != nil {
		return "", fmt.Errorf("open session: %w", err)
	}
	return out.ID, nil
}

// closeSession deletes the session, best effort.
func closeSession(base, id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "DELETE", base+"/v1/sessions/"+id, nil)
	if err == nil {
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}
}

// sessionPrint runs print(1) in session sid and checks the answer.
func sessionPrint(ctx context.Context, base, sid string) error {
	var out struct {
		Result struct {
			Status string `json:"status"`
			Stdout string `json:"stdout"`
		} `json:"result"`
	}
	body := `{"type":"function","function":{"name":"run_python","arguments":"{\"code\":\"print(1)\"}"}}`
	if err := postJSON(ctx, base+"/v1/sessions/"+sid+"/tool-calls", body, &out); err != nil {
		return err
	}
	if out.Result.Status != "ok" || out.Result.Stdout != "1\n" {
		return fmt.Errorf("status %s, stdout %q", out.Result.Status, out.Result.Stdout)
	}
	return nil
}

// postJSON posts body and decodes a 2xx answer into out.
func postJSON(ctx context.Context, url, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.NewDecoder(res.Body).Decode(&e)
		return errors.New(fmt.Sprint(res.StatusCode, " ", e.Error.Message))
	}
	return json.NewDecoder(res.Body).Decode(out)
}
