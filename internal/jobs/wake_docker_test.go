package jobs_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/enginetest"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// resumeWorker runs a worker on q over a Keeper of a fresh engine with
// cfg (its Resumes over st) and returns the Keeper and a stop that ends
// the worker as a SIGTERM does (OnStop saves its sessions).
func resumeWorker(t *testing.T, q queue.Queue, st state.Store, name string, cfg snapshots.ResumeConfig) (*snapshots.Keeper, *sandbox.Engine, func()) {
	t.Helper()
	e := enginetest.Docker(t, name, nil)
	k := snapshots.NewKeeper(e, snapshots.New(st, snapshots.DefaultConfig(), nil), snapshots.NewCallLog(st), nil)
	cfg.Resumes = snapshots.NewResumes(st, snapshots.New(st, snapshots.DefaultConfig(), nil))
	k.EnableResume(cfg)
	w, err := q.NewWorker(queue.WorkerConfig{Concurrency: 2, OnStop: func() {
		ctx, cancel := context.WithTimeout(context.Background(), testscale.D(time.Minute))
		defer cancel()
		k.HibernateAll(ctx)
	}}, jobs.NewRunner(k))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	go k.RunHibernator(ctx)
	var stopped bool
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return k, e, stop
}

func boltStore(t *testing.T) state.Store {
	t.Helper()
	st, err := state.OpenBolt(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func run(t *testing.T, c *jobs.Client, owner, id, code string) core.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(3*time.Minute))
	defer cancel()
	res, err := c.Exec(ctx, core.Request{Owner: owner, SessionID: id, Language: core.Python, Code: code,
		Limits: core.Limits{Timeout: time.Minute}})
	if err != nil {
		t.Fatalf("call %q: %v", code, err)
	}
	if res.Status != core.StatusOK {
		t.Fatalf("call %q: %s %s %+v", code, res.Status, res.Message, res.Error)
	}
	return res
}

// TestHibernateThenWake: a session idle past HibernateAfter is saved and
// its container freed (the engine no longer has it, its resume record
// says hibernated); its next call wakes it under the same id with its
// variables and its files, says resumed with the wake's time, and names
// what could not be saved (an open file).
func TestHibernateThenWake(t *testing.T) {
	st := boltStore(t)
	q, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	_, _, _ = resumeWorker(t, q, st, "hib", snapshots.ResumeConfig{HibernateAfter: 3 * time.Second})
	c := jobs.NewClient(q, jobs.ClientConfig{})
	res := snapshots.NewResumes(st, snapshots.New(st, snapshots.DefaultConfig(), nil))
	c.SetResumes(res)
	ctx := context.Background()
	id, err := c.OpenSession(ctx, "alice", core.Limits{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c, "alice", id, "x = 41\nimport os\nopen('/work/f.txt','w').write('kept')\nfh = open('/work/f.txt')")
	deadline := time.Now().Add(testscale.D(time.Minute))
	for {
		r, err := res.Get(ctx, "alice", id)
		if err == nil && r.Hibernated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not hibernated: %+v %v", r, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if _, err := c.SessionInfo(ctx, "alice", id); err == nil {
		t.Fatal("a hibernated session still has its container")
	}
	out := run(t, c, "alice", id, "print(x + 1, open('/work/f.txt').read())")
	if strings.TrimSpace(out.Stdout) != "42 kept" {
		t.Fatalf("after the wake: %q", out.Stdout)
	}
	if !out.Resumed || out.WakeMS <= 0 {
		t.Fatalf("resumed %v wake_ms %d", out.Resumed, out.WakeMS)
	}
	var names []string
	for _, s := range out.ResumeSkipped {
		names = append(names, s.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "fh") {
		t.Fatalf("the open file is not reported: %+v", out.ResumeSkipped)
	}
	t.Logf("wake took %d ms", out.WakeMS)
	again := run(t, c, "alice", id, "print(x)")
	if again.Resumed || strings.TrimSpace(again.Stdout) != "41" {
		t.Fatalf("the call after the wake: resumed %v, %q", again.Resumed, again.Stdout)
	}
	// A hibernated session closes too, losing its snapshot.
	other, err := c.OpenSession(ctx, "alice", core.Limits{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	run(t, c, "alice", other, "w = 1")
	for deadline := time.Now().Add(testscale.D(time.Minute)); ; time.Sleep(200 * time.Millisecond) {
		if r, err := res.Get(ctx, "alice", other); err == nil && r.Hibernated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second session did not hibernate")
		}
	}
	if err := c.CloseSession(ctx, "alice", other); err != nil {
		t.Fatalf("close of a hibernated session: %v", err)
	}
	if _, err := res.Get(ctx, "alice", other); err == nil {
		t.Fatal("a closed hibernated session keeps its resume record")
	}
	// Closing a session ends it for good: no resume record is left.
	if err := c.CloseSession(ctx, "alice", id); err != nil {
		t.Fatal(err)
	}
	if _, err := res.Get(ctx, "alice", id); err == nil {
		t.Fatal("a closed session keeps its resume record")
	}
}
