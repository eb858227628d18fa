package api

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/snapshots"
)

// TestVariablesOfHibernatedSession: listing the variables of a hibernated
// session answers 409 conflict saying it is hibernated and that its next
// call brings them back, instead of asking the kernel, which woke the
// session (a container start, for a panel's refresh).
func TestVariablesOfHibernatedSession(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.openSession(keyAlice)
	h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/variables", nil).must(t, 200)

	ctx := context.Background()
	st := h.srv.deps.State
	res := snapshots.NewResumes(st, snapshots.New(st, snapshots.DefaultConfig(), time.Now))
	if err := res.Put(ctx, snapshots.Resume{Owner: "alice", Session: sid, Snapshot: "snap-x", At: time.Now(), Hibernated: true}); err != nil {
		t.Fatal(err)
	}
	h.srv.records.SetHibernated(ctx, "alice", sid, true)
	if got := h.do(keyAlice, "GET", "/v1/sessions/"+sid, nil).must(t, 200).JSON(t)["state"]; got != "hibernated" {
		t.Fatalf("state %v, want hibernated", got)
	}
	r := h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/variables", nil).must(t, 409)
	if r.errCode(t) != core.ErrConflict || !strings.Contains(string(r.Body), "hibernated") {
		t.Fatalf("answer %s, want conflict naming hibernation", r.Body)
	}
}
