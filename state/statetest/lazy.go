package statetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/state"
)

// testLazy: a lazy Put (PutOptions.Lazy) behaves as any write for every
// reader: visible at once to Get and List (merged in id order with
// committed records), versions count on, conditions hold, Delete and TTL
// apply, and an ordinary write builds on it.
func testLazy(t *testing.T, s state.Store) {
	c := ctx(t)
	v1 := mustPut(t, s, key("b"), "one", state.PutOptions{})
	v2, err := s.Put(c, key("b"), []byte("two"), state.PutOptions{Lazy: true, IfVersion: v1})
	if err != nil || v2 != v1+1 {
		t.Fatalf("lazy CAS put = %d, %v; want %d", v2, err, v1+1)
	}
	if it, err := s.Get(c, key("b")); err != nil || string(it.Value) != "two" || it.Version != v2 {
		t.Fatalf("get after lazy put = %q v%d, %v", it.Value, it.Version, err)
	}
	if _, err := s.Put(c, key("b"), []byte("x"), state.PutOptions{Lazy: true, IfVersion: v1}); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("lazy put on a stale version: %v, want ErrConflict", err)
	}
	if _, err := s.Put(c, key("b"), []byte("x"), state.PutOptions{Lazy: true, IfVersion: -1}); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("lazy create of an existing record: %v, want ErrConflict", err)
	}
	mustPut(t, s, key("a"), "A", state.PutOptions{Lazy: true})
	mustPut(t, s, key("c"), "C", state.PutOptions{})
	items, err := s.List(c, "thing", "alice", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Key.ID+"="+string(it.Value))
	}
	if want := "[a=A b=two c=C]"; sprint(got) != want {
		t.Fatalf("list = %v, want %s", got, want)
	}
	if items, _ := s.List(c, "thing", "alice", "a", 1); len(items) != 1 || items[0].Key.ID != "b" {
		t.Fatalf("list after a, limit 1 = %v", items)
	}
	// An ordinary write builds on the lazy one.
	v3, err := s.Put(c, key("b"), []byte("three"), state.PutOptions{IfVersion: v2})
	if err != nil || v3 != v2+1 {
		t.Fatalf("put over a lazy write = %d, %v", v3, err)
	}
	mustPut(t, s, key("a"), "A2", state.PutOptions{Lazy: true})
	if err := s.Delete(c, key("a"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(c, key("a")); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("get after delete of a lazy record: %v", err)
	}
	mustPut(t, s, key("ttl"), "x", state.PutOptions{Lazy: true, TTL: 200 * time.Millisecond})
	time.Sleep(300 * time.Millisecond) // past the TTL: expiry is exact, not a timing bound
	if _, err := s.Get(c, key("ttl")); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("expired lazy record: %v, want ErrNotFound", err)
	}
	// Concurrent lazy CAS increments lose nothing.
	k := key("n")
	mustPut(t, s, k, "0", state.PutOptions{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < 20; {
				it, err := s.Get(c, k)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Put(c, k, it.Value, state.PutOptions{Lazy: true, IfVersion: it.Version}); err == nil {
					done++
				} else if !errors.Is(err, state.ErrConflict) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if it, err := s.Get(c, k); err != nil || it.Version != 81 {
		t.Fatalf("after 80 lazy CAS writes: version %d, %v; want 81", it.Version, err)
	}
}

func sprint(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
