package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/redistest"
	"github.com/airlock-dev/airlock/queue"
)

// TestReaperBound: a session counts as bound only while its queue binding
// names this worker; a missing binding or another worker's is unbound, and
// an unreachable Redis is an error (the session is spared).
func TestReaperBound(t *testing.T) {
	srv := redistest.Start(t, false)
	rdb := srv.Client(t)
	q, err := queue.NewRedis(queue.Config{Name: "q", SubmitTimeout: time.Second}, queue.Deps{Redis: rdb})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	r := &reaper{alive: q, queue: "q", worker: "me-1-abc"}
	ctx := context.Background()
	if err := rdb.Set(ctx, "airlock:{q}:sess:s-mine", "me-1-abc", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "airlock:{q}:sess:s-theirs", "other-2-def", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"s-mine": true, "s-theirs": false, "s-none": false} {
		got, err := r.bound(ctx, "owner", id)
		if err != nil || got != want {
			t.Errorf("bound(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	srv.Stop()
	if _, err := r.bound(ctx, "owner", "s-mine"); err == nil {
		t.Error("with Redis down the binding must be unknown (an error), not unbound")
	}
}

// TestNewWorkerID: the stack's worker ids have the queue's shape
// (host-pid-random) and differ per call.
func TestNewWorkerID(t *testing.T) {
	a, b := newWorkerID(), newWorkerID()
	if !regexp.MustCompile(`^.+-\d+-[0-9a-f]{6}$`).MatchString(a) || a == b {
		t.Fatalf("worker ids %q %q", a, b)
	}
}
