package idempotency

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/storetest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
)

func next(t *testing.T, k *Keys, r Request, seen ...string) Step {
	t.Helper()
	s, err := k.Next(context.Background(), r, seen)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestContract runs the protocol on every backend, as two replicas would
// over one store.
func TestContract(t *testing.T) {
	for name, open := range storetest.Backends() {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			a, b := New(st), New(st)
			explicitReplays(t, a, b)
			implicitRunsAgainOnceAnswered(t, a, b)
			takeoverKeepsToken(t, a, b)
			conflictAndRelease(t, a, b)
		})
	}
}

// explicitReplays: an explicit key's answer is replayed to every later
// request, on any replica, until it is forgotten.
func explicitReplays(t *testing.T, a, b *Keys) {
	ctx := context.Background()
	r := Request{Owner: "alice", Key: "k1", Fingerprint: "fp1"}
	s := next(t, a, r)
	if s.Claim == nil || JobKey(s.Claim) != "k1" {
		t.Fatalf("first request: %+v", s)
	}
	if w := next(t, b, r); w.Waiting != s.Claim.Token {
		t.Fatalf("while it runs, B: %+v", w)
	}
	if err := a.Finish(ctx, s.Claim, 200, []byte("answer"), 0); err != nil {
		t.Fatal(err)
	}
	for _, k := range []*Keys{a, b} {
		if got := next(t, k, r); got.Answer == nil || string(got.Answer.Body) != "answer" || got.Answer.Status != 200 {
			t.Fatalf("a later request: %+v", got)
		}
	}
	if bob := next(t, a, Request{Owner: "bob", Key: "k1", Fingerprint: "fp1"}); bob.Claim == nil {
		t.Fatalf("bob's key k1 is alice's: %+v", bob)
	}
	got := next(t, b, r)
	if err := b.Forget(ctx, r, got.Answer); err != nil {
		t.Fatal(err)
	}
	if again := next(t, a, r); again.Claim == nil {
		t.Fatalf("after Forget: %+v", again)
	}
}

// implicitRunsAgainOnceAnswered: an implicit key's duplicate that arrives
// while the first runs gets its answer; one that arrives after runs anew,
// as a new job.
func implicitRunsAgainOnceAnswered(t *testing.T, a, b *Keys) {
	ctx := context.Background()
	r := Request{Owner: "alice", Key: "call:c1:fp", Fingerprint: "fp", Implicit: true}
	first := next(t, a, r)
	w := next(t, b, r)
	if first.Claim == nil || w.Waiting != first.Claim.Token {
		t.Fatalf("in flight: %+v / %+v", first, w)
	}
	if err := a.Finish(ctx, first.Claim, 200, []byte("one"), 0); err != nil {
		t.Fatal(err)
	}
	if got := next(t, b, r, w.Waiting); got.Answer == nil || string(got.Answer.Body) != "one" {
		t.Fatalf("the waiting duplicate: %+v", got)
	}
	later := next(t, b, r)
	if later.Claim == nil || later.Claim.Token == first.Claim.Token || JobKey(later.Claim) == JobKey(first.Claim) {
		t.Fatalf("a request after the answer: %+v (first %+v)", later, first.Claim)
	}
}

// takeoverKeepsToken: when the holder's reservation lapses, the waiting
// request runs the call with the token it saw (the same job).
func takeoverKeepsToken(t *testing.T, a, b *Keys) {
	ctx := context.Background()
	for _, implicit := range []bool{false, true} {
		r := Request{Owner: "alice", Key: "take", Fingerprint: "fp", Implicit: implicit}
		first := next(t, a, r)
		w := next(t, b, r)
		if err := a.st.Delete(ctx, storeKey("alice", "take"), 0); err != nil { // the lease lapsing
			t.Fatal(err)
		}
		got := next(t, b, r, w.Waiting)
		if got.Claim == nil || JobKey(got.Claim) != JobKey(first.Claim) {
			t.Fatalf("implicit=%v takeover: %+v, first %+v", implicit, got, first.Claim)
		}
		b.Release(ctx, got.Claim)
	}
}

// conflictAndRelease: another request under the key is a conflict naming
// it; a released key runs again.
func conflictAndRelease(t *testing.T, a, b *Keys) {
	ctx := context.Background()
	r := Request{Owner: "alice", Key: "k2", Fingerprint: "x"}
	s := next(t, a, r)
	_, err := b.Next(ctx, Request{Owner: "alice", Key: "k2", Fingerprint: "y"}, nil)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, core.ErrConflict) || ce.ErrorDetails()["idempotency_key"] != "k2" {
		t.Fatalf("another body under k2: %v", err)
	}
	a.Release(ctx, s.Claim)
	if again := next(t, b, r); again.Claim == nil {
		t.Fatalf("after release: %+v", again)
	}
}

// stalledStore blocks every operation until its context ends, as a
// stalled Redis does.
type stalledStore struct{ state.Store }

func (stalledStore) Put(ctx context.Context, _ state.Key, _ []byte, _ state.PutOptions) (int64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func (stalledStore) Get(ctx context.Context, _ state.Key) (state.Item, error) {
	<-ctx.Done()
	return state.Item{}, ctx.Err()
}

// TestStalledStoreRefusesFast: a store that does not answer refuses the
// call as unavailable after OpTimeout, whatever the request's deadline.
func TestStalledStoreRefusesFast(t *testing.T) {
	k := New(stalledStore{state.NewMemory(nil)})
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	defer cancel()
	start := time.Now()
	_, err := k.Next(ctx, Request{Owner: "alice", Key: "k", Fingerprint: "f"}, nil)
	if el := time.Since(start); !errors.Is(err, core.ErrUnavailable) || el > OpTimeout+testscale.D(time.Second) {
		t.Fatalf("after %v: %v", el, err)
	}
}
