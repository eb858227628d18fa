package sandbox

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
)

// TestMissingSince: a key counts as gone only once it was missing on every
// observation for the whole span; a present or unknown one starts over.
func TestMissingSince(t *testing.T) {
	var m missingSince
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	steps := []struct {
		key     string
		missing bool
		at      time.Duration
		want    bool
	}{
		{"w", true, 0, false},               // first sighting
		{"w", true, 4 * time.Second, false}, // not yet 5 s
		{"w", true, 5 * time.Second, true},  // missing for 5 s
		{"w", false, 6 * time.Second, false},
		{"w", true, 7 * time.Second, false}, // starts over
		{"w", true, 11 * time.Second, false},
		{"w", true, 12 * time.Second, true},
		{"x", true, 12 * time.Second, false}, // keys are independent
	}
	for i, s := range steps {
		if got := m.observe(s.key, s.missing, at(s.at), 5*time.Second); got != s.want {
			t.Fatalf("step %d (%+v): got %v", i, s, got)
		}
	}
	m.retain(map[string]bool{"w": true})
	if m.observe("x", true, at(20*time.Second), 5*time.Second) {
		t.Fatal("a key dropped by retain kept its first sighting")
	}
	if !m.observe("w", true, at(20*time.Second), 5*time.Second) {
		t.Fatal("a retained key lost its first sighting")
	}
	var z missingSince
	if !z.observe("y", true, t0, 0) {
		t.Fatal("with no confirmation span the first missing sighting must count")
	}
}

// reapFake is a fake daemon holding a fixed container list; it records
// what was removed.
type reapFake struct {
	mu      sync.Mutex
	list    []container.Summary
	removed []string
}

func (r *reapFake) docker() *fakeDocker {
	return &fakeDocker{
		list: func() ([]container.Summary, error) {
			r.mu.Lock()
			defer r.mu.Unlock()
			var out []container.Summary
			for _, c := range r.list {
				if !slices.Contains(r.removed, c.ID) {
					out = append(out, c)
				}
			}
			return out, nil
		},
		remove: func(id string) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.removed = append(r.removed, id)
			return nil
		},
	}
}

func (r *reapFake) gone() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.removed)
	slices.Sort(out)
	return out
}

// TestReapDeadWorkersDecisions: which containers one sweep removes. Only a
// worker of the reaper's queue that is reported dead, on two sweeps at least
// the confirmation span apart, loses its containers (all of them, the
// worker asked once); live, unknown, other-queue, own and live-local ones
// are kept.
func TestReapDeadWorkersDecisions(t *testing.T) {
	host, _ := os.Hostname()
	me := procIdentity(os.Getpid())
	lbl := func(worker, queue, instance, host, proc string) map[string]string {
		return map[string]string{LabelManaged: "true", LabelWorker: worker, LabelQueue: queue,
			LabelInstance: instance, "airlock.host": host, labelProc: proc}
	}
	rf := &reapFake{list: []container.Summary{
		{ID: "dead-1", Labels: lbl("w-dead", "q", "other", "elsewhere", "1:1")},
		{ID: "dead-2", Labels: lbl("w-dead", "q", "other", "elsewhere", "1:1")},
		{ID: "live", Labels: lbl("w-live", "q", "other", "elsewhere", "1:1")},
		{ID: "unknown", Labels: lbl("w-unknown", "q", "other", "elsewhere", "1:1")},
		{ID: "other-queue", Labels: lbl("w-dead", "q2", "other", "elsewhere", "1:1")},
		{ID: "own", Labels: lbl("w-dead", "q", "me", "elsewhere", "1:1")},
		{ID: "local-live", Labels: lbl("w-local", "q", "other", host, me)},
		{ID: "local-dead", Labels: lbl("w-gone", "q", "other", host, "999999999:1")},
	}}
	e := New(Config{Instance: "me"}, rf.docker(), nil)
	asked := map[string]int{}
	alive := func(_ context.Context, w string) (bool, error) {
		asked[w]++
		switch w {
		case "w-live":
			return true, nil
		case "w-unknown":
			return false, errors.New("redis: i/o timeout")
		}
		return false, nil
	}
	ctx := context.Background()
	const confirm = 50 * time.Millisecond
	n, err := e.ReapDeadWorkers(ctx, "q", alive, confirm)
	if err != nil || n != 0 || len(rf.gone()) != 0 {
		t.Fatalf("first sweep removed %d %v (err %v): nothing may go before the confirmation span", n, rf.gone(), err)
	}
	time.Sleep(confirm + 10*time.Millisecond)
	n, err = e.ReapDeadWorkers(ctx, "q", alive, confirm)
	want := []string{"dead-1", "dead-2", "local-dead"}
	if err != nil || n != 3 || !slices.Equal(rf.gone(), want) {
		t.Fatalf("second sweep removed %d %v (err %v), want %v", n, rf.gone(), err, want)
	}
	if asked["w-dead"] != 2 || asked["w-local"] != 0 {
		t.Errorf("liveness asked %v: once per worker and sweep, never for a live local process", asked)
	}
}

// TestReapDeadWorkersRevived: a worker seen dead once and then alive again
// (a Redis stall, a late refresh) keeps its containers.
func TestReapDeadWorkersRevived(t *testing.T) {
	rf := &reapFake{list: []container.Summary{{ID: "c", Labels: map[string]string{LabelManaged: "true",
		LabelWorker: "w", LabelQueue: "q", LabelInstance: "other", "airlock.host": "elsewhere"}}}}
	e := New(Config{Instance: "me"}, rf.docker(), nil)
	answers := []bool{false, true, false}
	for i, up := range answers {
		_, err := e.ReapDeadWorkers(context.Background(), "q", func(context.Context, string) (bool, error) { return up, nil }, time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if i < len(answers)-1 {
			time.Sleep(5 * time.Millisecond)
		}
	}
	if g := rf.gone(); len(g) != 0 {
		t.Fatalf("removed %v: dead, alive, dead again is not dead for the span", g)
	}
}

// TestLabelsCarryWorker: an engine with a worker labels its containers
// with the worker and queue; one without adds neither.
func TestLabelsCarryWorker(t *testing.T) {
	l := New(Config{Instance: "i", Worker: "host-1-abc", Queue: "q"}, &fakeDocker{}, nil).labels("pool", "", "", time.Minute)
	if l[LabelWorker] != "host-1-abc" || l[LabelQueue] != "q" {
		t.Fatalf("labels %v lack the worker", l)
	}
	l = New(Config{Instance: "i"}, &fakeDocker{}, nil).labels("pool", "", "", time.Minute)
	if _, ok := l[LabelWorker]; ok {
		t.Fatalf("labels %v name a worker the engine does not serve", l)
	}
}

// TestReapUnboundSessions: a session whose binding is gone on two sweeps
// the span apart is ended and its container removed; a bound one and one
// whose binding is unknown are kept.
func TestReapUnboundSessions(t *testing.T) {
	rf := &reapFake{}
	e := New(Config{Instance: "me"}, rf.docker(), nil)
	for _, id := range []string{"s-bound", "s-gone", "s-unknown"} {
		e.sessions.live[id] = &session{box: &box{id: "c-" + id}, info: SessionInfo{ID: id, Owner: "alice"}}
	}
	e.sessions.live["\x00reserved:x"] = &session{info: SessionInfo{Owner: "bob"}} // an admission slot, no box
	bound := func(_ context.Context, owner, id string) (bool, error) {
		if owner != "alice" {
			t.Errorf("asked about owner %q", owner)
		}
		switch id {
		case "s-bound":
			return true, nil
		case "s-unknown":
			return false, errors.New("redis: i/o timeout")
		}
		return false, nil
	}
	const confirm = 50 * time.Millisecond
	if n := e.ReapUnboundSessions(context.Background(), bound, confirm); n != 0 {
		t.Fatalf("first sweep ended %d sessions", n)
	}
	time.Sleep(confirm + 10*time.Millisecond)
	if n := e.ReapUnboundSessions(context.Background(), bound, confirm); n != 1 {
		t.Fatalf("second sweep ended %d sessions, want 1", n)
	}
	e.Settle()
	if g := rf.gone(); !slices.Equal(g, []string{"c-s-gone"}) {
		t.Fatalf("removed containers %v, want the unbound session's only", g)
	}
	if _, err := e.sessions.get("", "s-gone"); err == nil {
		t.Fatal("the unbound session is still live")
	}
	for _, id := range []string{"s-bound", "s-unknown"} {
		if _, err := e.sessions.get("alice", id); err != nil {
			t.Fatalf("session %s was ended: %v", id, err)
		}
	}
}

// TestReapUnboundSparesAWake: a session reaped as unbound and woken again
// under its id (its call's reply has not written the binding yet) is not
// ended by the next sweep: not while a call runs on it, nor within confirm
// of its last use, and the old incarnation's count does not carry over
// (CI saw a wake's restore killed by the sweep after the reap).
func TestReapUnboundSparesAWake(t *testing.T) {
	rf := &reapFake{}
	e := New(Config{Instance: "me"}, rf.docker(), nil)
	unbound := func(context.Context, string, string) (bool, error) { return false, nil }
	const confirm = 50 * time.Millisecond
	open := func(ctr string, used time.Time) *session {
		ss := &session{box: &box{id: ctr}, info: SessionInfo{ID: "s-1", Owner: "alice", LastUsed: used}}
		e.sessions.mu.Lock()
		e.sessions.live["s-1"] = ss
		e.sessions.mu.Unlock()
		return ss
	}
	open("c-old", time.Time{})
	e.ReapUnboundSessions(context.Background(), unbound, confirm)
	time.Sleep(confirm + 10*time.Millisecond)
	if n := e.ReapUnboundSessions(context.Background(), unbound, confirm); n != 1 {
		t.Fatalf("the unbound session was not ended (%d)", n)
	}
	woken := open("c-new", time.Now())
	woken.inUse.Add(1) // the wake's restore and call
	for i := 0; i < 3; i++ {
		time.Sleep(confirm + 10*time.Millisecond)
		if n := e.ReapUnboundSessions(context.Background(), unbound, confirm); n != 0 {
			t.Fatalf("sweep %d ended the woken session while in use", i)
		}
	}
	woken.inUse.Add(-1)
	e.sessions.mu.Lock()
	woken.info.LastUsed = time.Now()
	e.sessions.mu.Unlock()
	if n := e.ReapUnboundSessions(context.Background(), unbound, confirm); n != 0 {
		t.Fatal("a sweep right after the call ended the woken session")
	}
	time.Sleep(confirm + 10*time.Millisecond)
	if n := e.ReapUnboundSessions(context.Background(), unbound, confirm); n != 0 {
		t.Fatal("the first sweep that saw the idle woken session unbound ended it")
	}
	time.Sleep(confirm + 10*time.Millisecond)
	if n := e.ReapUnboundSessions(context.Background(), unbound, confirm); n != 1 {
		t.Fatal("the woken session, unbound and idle on two sweeps, was kept")
	}
	e.Settle()
	if g := rf.gone(); !slices.Equal(slices.Sorted(slices.Values(g)), []string{"c-new", "c-old"}) {
		t.Fatalf("removed containers %v", g)
	}
}
