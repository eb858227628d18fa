package approvals

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/redistest"
)

// TestStores runs one contract on the memory and Redis stores.
func TestStores(t *testing.T) {
	t.Run("memory", func(t *testing.T) { contract(t, NewMemory(nil)) })
	t.Run("redis", func(t *testing.T) {
		srv := redistest.Start(t, false)
		contract(t, NewRedis(srv.Client(t), "", time.Hour))
	})
}

// tokens returns the tokens of rs.
func tokens(rs []Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Token)
	}
	return out
}

func contract(t *testing.T, s Store) {
	ctx := context.Background()
	for _, tok := range []string{"b", "a", "c"} {
		if err := s.Put(ctx, Record{Run: "r1", Token: tok, Value: []byte("v-" + tok)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Put(ctx, Record{Run: "r2", Token: "z", Value: []byte("other")}); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, "r1")
	if err != nil || len(list) != 3 || list[0].Token != "b" || list[1].Token != "a" || list[2].Token != "c" || string(list[1].Value) != "v-a" || list[0].Run != "r1" {
		t.Fatalf("list in put order: %v %v", tokens(list), err)
	}

	// Exactly one of many concurrent takes wins, and gets the value.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Take(ctx, "r1", "a")
			switch {
			case err == nil && r.Token == "a" && r.Run == "r1" && string(r.Value) == "v-a":
				wins.Add(1)
			case errors.Is(err, ErrNotFound) && errors.Is(err, core.ErrNotFound):
			default:
				t.Errorf("take: %+v %v", r, err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d takes of one token succeeded", wins.Load())
	}
	if list, _ := s.List(ctx, "r1"); len(list) != 2 || list[0].Token != "b" || list[1].Token != "c" {
		t.Fatalf("after take: %v", tokens(list))
	}
	if _, err := s.Take(ctx, "r1", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown token: %v", err)
	}
	// A token is scoped by its run.
	if _, err := s.Take(ctx, "r2", "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("token of another run: %v", err)
	}
	// (run, token) pairs that join to the same text stay apart.
	_ = s.Put(ctx, Record{Run: "x:y", Token: "t", Value: []byte("1")})
	_ = s.Put(ctx, Record{Run: "x", Token: "y:t", Value: []byte("2")})
	if r, err := s.Take(ctx, "x", "y:t"); err != nil || string(r.Value) != "2" {
		t.Fatalf("ambiguous keys: %q %v", r.Value, err)
	}

	if err := s.DeleteRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(ctx, "r1"); len(list) != 0 {
		t.Fatalf("deleted run still lists %v", tokens(list))
	}
	if _, err := s.Take(ctx, "r1", "b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("take after DeleteRun: %v", err)
	}
	if list, _ := s.List(ctx, "r2"); len(list) != 1 || string(list[0].Value) != "other" {
		t.Fatalf("other run lost its approval: %v", tokens(list))
	}

	// Ungrouped records: take-once, an expiry that round-trips, and they
	// are not listed.
	exp := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	if err := s.Put(ctx, Record{Token: "apv_1", Value: []byte(`{"call":1}`), Expires: exp}); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.List(ctx, ""); len(list) != 0 {
		t.Fatalf("ungrouped records listed: %v", tokens(list))
	}
	r, err := s.Take(ctx, "", "apv_1")
	if err != nil || string(r.Value) != `{"call":1}` || !r.Expires.Equal(exp) {
		t.Fatalf("ungrouped take: %+v %v (want expires %v)", r, err, exp)
	}
	if _, err := s.Take(ctx, "", "apv_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second take: %v", err)
	}

	// Expired records are gone.
	if err := s.Put(ctx, Record{Run: "r3", Token: "old", Value: []byte("x"), Expires: time.Now().Add(20 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	if list, _ := s.List(ctx, "r3"); len(list) != 0 {
		t.Fatalf("expired record listed: %v", tokens(list))
	}
	if _, err := s.Take(ctx, "r3", "old"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired take: %v", err)
	}
}

func TestMemoryClock(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	m := NewMemory(func() time.Time { return now })
	ctx := context.Background()
	_ = m.Put(ctx, Record{Token: "t", Expires: now.Add(time.Minute)})
	now = now.Add(2 * time.Minute)
	_ = m.Put(ctx, Record{Token: "u"}) // sweeps the expired one
	if m.Len() != 1 {
		t.Fatalf("expired record not swept: %d", m.Len())
	}
	if _, err := m.Take(ctx, "", "u"); err != nil {
		t.Fatalf("record without expiry: %v", err)
	}
}
