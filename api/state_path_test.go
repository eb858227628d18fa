package api

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/state"
)

// TestSessionCallNoCommit (issue 33): on the embedded store a warm session
// call's state writes (the record's touch at the call's end, and on read
// past TouchSlack; the reservation and answer of its call id's implicit
// idempotency key) neither commit (no fsync) nor wait for the store's
// committer: they go straight to its overlay. A call with an explicit
// Idempotency-Key still commits its answer. What they wrote is read back
// at once, and after the store is closed and opened again (a restart) the
// record still says when the last call ended.
func TestSessionCallNoCommit(t *testing.T) {
	path := t.TempDir()
	st, err := state.OpenBoltWith(path, state.BoltOptions{LazyFlush: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	h := newHarness(t, func(_ *Config, d *Deps) { d.State = st })
	id := h.openSession(keyAlice)
	commits, queued := st.Commits(), st.QueuedWrites()
	for i := range 5 {
		if i%2 == 1 {
			h.clock.Advance(h.srv.records.TouchSlack() + time.Second) // past TouchSlack: a touch on read too
		}
		body := py("print(1)")
		body["id"] = fmt.Sprint("call_", i) // an implicit idempotency key
		if i == 4 {
			delete(body, "id") // none
		}
		h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", body).must(t, http.StatusOK)
	}
	if n := st.Commits() - commits; n != 0 {
		t.Fatalf("5 session calls made %d commits (disk syncs), want none", n)
	}
	if n := st.QueuedWrites() - queued; n != 0 {
		t.Fatalf("5 session calls handed %d writes to the committer, want none", n)
	}
	// An explicit Idempotency-Key's answer is kept durably (synced).
	h.do(keyAlice, "POST", "/v1/sessions/"+id+"/tool-calls", py("print(2)"), "Idempotency-Key", "k1").must(t, http.StatusOK)
	if st.Commits() == commits {
		t.Fatal("a call with an Idempotency-Key made no commit: its answer must be durable")
	}
	last := h.clock.Now()
	rec, ok := h.srv.records.Get(t.Context(), "alice", id, false)
	if !ok || !rec.LastUsed.Equal(last) {
		t.Fatalf("record after the calls: %+v %v, want last used %v", rec, ok, last)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2, err := state.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st2.Close() }()
	h2 := newHarness(t, func(c *Config, d *Deps) { d.State = st2; c.Now = h.clock.Now })
	rec, ok = h2.srv.records.Get(t.Context(), "alice", id, false)
	if !ok || !rec.LastUsed.Equal(last) {
		t.Fatalf("record after a restart: %+v %v, want last used %v", rec, ok, last)
	}
}
