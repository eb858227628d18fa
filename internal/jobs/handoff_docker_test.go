package jobs_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/state"
)

// redisQueue opens a queue named name on srv (one per process of a
// deployment: a worker's, the API's).
func redisQueue(t *testing.T, srv *redistest.Server, name string) *queue.Redis {
	t.Helper()
	q, err := queue.NewRedis(queue.Config{Name: name, SubmitTimeout: 2 * time.Second}, queue.Deps{Redis: srv.Client(t)})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestSIGTERMHandsSessionsOver: in a two-worker Redis deployment, five
// live sessions holding variables are on worker A; A stops as on SIGTERM
// (its OnStop saves every session before it gives them up); every next
// call answers with its variables on worker B and says resumed.
func TestSIGTERMHandsSessionsOver(t *testing.T) {
	srv := redistest.Start(t, false)
	st := state.NewRedis(srv.Client(t), "airlock:{state}:")
	cq := redisQueue(t, srv, "hand")
	c := jobs.NewClient(cq, jobs.ClientConfig{})
	res := snapshots.NewResumes(st, snapshots.New(st, snapshots.DefaultConfig(), nil))
	c.SetResumes(res)
	kA, _, stopA := resumeWorker(t, redisQueue(t, srv, "hand"), st, "wa", snapshots.ResumeConfig{})
	_ = kA
	ctx := context.Background()
	const n = 5
	ids := make([]string, n)
	for i := range ids {
		id, err := c.OpenSession(ctx, owner(i), core.Limits{Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
		run(t, c, owner(i), id, fmt.Sprintf("v = %d\nbig = list(range(%d))", i*7, 1000+i))
	}
	holderA, err := cq.SessionHolder(ctx, ids[0])
	if err != nil || holderA == "" {
		t.Fatalf("holder: %q %v", holderA, err)
	}
	_, _, _ = resumeWorker(t, redisQueue(t, srv, "hand"), st, "wb", snapshots.ResumeConfig{})
	start := time.Now()
	stopA() // SIGTERM: stop taking jobs, save the sessions, give them up
	t.Logf("worker A saved %d sessions and stopped in %v", n, time.Since(start))
	for i, id := range ids {
		r, err := res.Get(ctx, owner(i), id)
		if err != nil || !r.Hibernated {
			t.Fatalf("session %d not saved at shutdown: %+v %v", i, r, err)
		}
		out := run(t, c, owner(i), id, "print(v, len(big))")
		if got, want := strings.TrimSpace(out.Stdout), fmt.Sprintf("%d %d", i*7, 1000+i); got != want || !out.Resumed {
			t.Fatalf("session %d after the hand-off: %q resumed %v, want %q resumed", i, got, out.Resumed, want)
		}
		h, _ := cq.SessionHolder(ctx, id)
		if h == "" || h == holderA {
			t.Fatalf("session %d is held by %q after A left", i, h)
		}
		t.Logf("session %d woke in %d ms", i, out.WakeMS)
	}
}

// owner is the owner of the test's session i (an owner may hold only a
// few sessions on one worker).
func owner(i int) string { return fmt.Sprintf("user%d", i) }
