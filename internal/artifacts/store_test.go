package artifacts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/storetest"
	"github.com/airlock-dev/airlock/state"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func art(name string, size int) core.Artifact {
	return core.Artifact{Name: name, MIME: "text/plain", Size: int64(size), SHA256: "sha-" + name, Data: bytes.Repeat([]byte("x"), size)}
}

// testStore is a store over a state.Memory on clk: artifacts kept a
// minute, total bytes for all owners, owner bytes and count each.
func testStore(clk *clock, total, owner int64, count int) *Store {
	return New(Config{TTL: time.Minute, MaxBytes: total, OwnerBytes: owner, OwnerCount: count, Now: clk.Now}, state.NewMemory(clk.Now))
}

// put puts a for owner (one-shot) and returns its id and refusal code.
func put(s *Store, owner string, a core.Artifact) (string, core.Code) {
	id, err := s.Put(context.Background(), owner, "", a)
	if err != nil {
		return id, core.CodeOf(err)
	}
	return id, ""
}

// has reports whether owner's artifact id of session can be read.
func has(t *testing.T, s *Store, owner, session, id string) bool {
	t.Helper()
	a, err := s.Get(context.Background(), owner, session, id)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil && len(a.Data) == int(a.Size)
}

func usage(t *testing.T, s *Store, owner string) (int64, int) {
	t.Helper()
	b, n, err := s.Usage(context.Background(), owner)
	if err != nil {
		t.Fatal(err)
	}
	return b, n
}

func TestStoreTTLCapAndDedupe(t *testing.T) {
	clk := &clock{now: t0}
	s := testStore(clk, 200, 100, 100)
	a, _ := put(s, "alice", art("a", 40))
	b, _ := put(s, "alice", art("b", 40))
	if !has(t, s, "alice", "", a) {
		t.Fatal("a missing")
	}
	if has(t, s, "bob", "", a) {
		t.Fatal("bob read alice's artifact")
	}
	if has(t, s, "alice", "ses_1", a) {
		t.Fatal("one-shot artifact found under a session")
	}
	if again, _ := put(s, "alice", art("a", 40)); again != a {
		t.Fatal("identical artifact stored twice")
	}
	if c, code := put(s, "alice", art("c", 40)); c != "" || code != core.ErrQuota { // over alice's quota: refused, a stays
		t.Fatalf("over the quota: id %q, %v", c, code)
	}
	if !has(t, s, "alice", "", a) {
		t.Fatal("a refused artifact evicted an older one")
	}
	if n, _ := usage(t, s, "alice"); n != 80 {
		t.Fatalf("alice's usage %d", n)
	}
	_, err := s.Put(context.Background(), "alice", "", art("huge", 101))
	var nk *NotKept
	if !errors.As(err, &nk) || nk.Code != core.ErrTooLarge || !strings.Contains(nk.Message, "budget") {
		t.Fatalf("artifact over the whole cap stored: %v", err)
	}
	if id, _ := put(s, "alice", core.Artifact{Name: "empty"}); id != "" {
		t.Fatal("artifact without bytes stored")
	}
	clk.Advance(30 * time.Second)
	d, _ := put(s, "alice", art("d", 10))
	clk.Advance(31 * time.Second) // a and b expire, d does not
	for _, id := range []string{a, b} {
		if has(t, s, "alice", "", id) {
			t.Fatalf("%s not expired", id)
		}
	}
	if !has(t, s, "alice", "", d) {
		t.Fatal("d missing")
	}
	clk.Advance(time.Hour)
	if has(t, s, "alice", "", d) {
		t.Fatal("d not expired")
	}
	if b, n := usage(t, s, "alice"); b != 0 || n != 0 {
		t.Fatalf("expired artifacts still counted: %d bytes, %d", b, n)
	}
}

// TestQuotaStaysWithinOwner: bob filling his quota gets his new artifacts
// refused (quota) and never touches alice's; when the whole store is full,
// new artifacts are refused (busy) and alice's stay.
func TestQuotaStaysWithinOwner(t *testing.T) {
	clk := &clock{now: t0}
	s := testStore(clk, 100, 60, 3)
	a, _ := put(s, "alice", art("a", 50))
	for i := range 20 {
		id, code := put(s, "bob", art(fmt.Sprint("b", i), 10))
		if (id != "") != (i < 3) || (i >= 3 && code != core.ErrQuota) {
			t.Fatalf("bob's %d: id %q, %v", i, id, code)
		}
		if _, n := usage(t, s, "bob"); n > 3 {
			t.Fatalf("bob holds %d artifacts over his count quota", n)
		}
	}
	if !has(t, s, "alice", "", a) {
		t.Fatal("bob's writes evicted alice's artifact")
	}
	// carol fills the store to 95 of 100 (alice 50, bob 30, carol 15): a
	// 45-byte artifact of dave's does not fit and is refused rather than
	// taking alice's or carol's room
	cid, _ := put(s, "carol", art("c", 15))
	_, err := s.Put(context.Background(), "dave", "", art("big", 45))
	if core.CodeOf(err) != core.ErrBusy || !strings.Contains(err.Error(), "store is full") {
		t.Fatalf("over the total: %v", err)
	}
	if !has(t, s, "alice", "", a) || !has(t, s, "carol", "", cid) {
		t.Fatal("a full store evicted an artifact")
	}
	if b, n := usage(t, s, "dave"); b != 0 || n != 0 {
		t.Fatalf("a refused artifact is counted: %d bytes, %d", b, n)
	}
	// a policy quota for erin
	s.cfg.OwnerQuota = func(o string) (int64, int) {
		if o == "erin" {
			return 20, 1
		}
		return 0, 0
	}
	if id, code := put(s, "erin", art("q1", 1)); id == "" {
		t.Fatalf("q1: %v", code)
	}
	_, err = s.Put(context.Background(), "erin", "", art("q2", 1))
	var nk *NotKept
	if !errors.As(err, &nk) || nk.Code != core.ErrQuota || nk.ErrorDetails()["budget"] != "artifact_count" || nk.ErrorDetails()["limit"] != 1 {
		t.Fatalf("erin's policy count quota not applied: %v", err)
	}
	if b, n := usage(t, s, "erin"); n != 1 || b != 1 {
		t.Fatalf("erin's usage: %d bytes, %d", b, n)
	}
	// past the TTL and one window, bob's quota is free again
	clk.Advance(time.Minute + s.quota.window)
	if id, code := put(s, "bob", art("later", 10)); id == "" {
		t.Fatalf("bob's quota did not free up after his artifacts expired: %v", code)
	}
}

// TestStoreIsCheap: 30,000 inserts by one owner cost little CPU (an old
// store scanned every artifact per insert: 35 s). CPU time of the
// process, not wall time, so a loaded machine does not fail it.
func TestStoreIsCheap(t *testing.T) {
	clk := &clock{now: t0}
	s := testStore(clk, 256<<20, 64<<20, 1000)
	start := processCPU(t)
	for i := range 30000 {
		_, _ = s.Put(context.Background(), "bob", "", core.Artifact{Name: fmt.Sprint("f", i), SHA256: fmt.Sprint(i), Data: []byte("x")})
	}
	if el := processCPU(t) - start; el > 2*time.Second {
		t.Fatalf("30,000 inserts took %v of CPU", el)
	}
	if _, n := usage(t, s, "bob"); n != 1000 {
		t.Fatalf("bob holds %d artifacts, quota 1000", n)
	}
}

// processCPU is the user and system CPU time this process used so far.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestStoreContract runs one contract on every backend: a large artifact
// (chunks past state.MaxValueSize) round-trips byte for byte; a second
// replica over the same store serves it and counts the same quota; one
// replica's put of the same artifact is not counted twice; sessions and
// owners stay apart.
func TestStoreContract(t *testing.T) {
	for name, open := range storetest.Backends() {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			cfg := Config{TTL: time.Hour, MaxBytes: 64 << 20, OwnerBytes: 24 << 20, OwnerCount: 10}
			a, b := New(cfg, st), New(cfg, st)
			ctx := context.Background()
			big := core.Artifact{Name: "outputs/big.bin", MIME: "application/octet-stream", Data: make([]byte, 10<<20+123)}
			for i := range big.Data {
				big.Data[i] = byte(i * 7)
			}
			checked, _ := Check([]core.Artifact{big}, 10, 32<<20)
			id, err := a.Put(ctx, "alice", "s1", checked[0])
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.Get(ctx, "alice", "s1", id)
			if err != nil || !bytes.Equal(got.Data, big.Data) || got.Size != int64(len(big.Data)) || got.SHA256 != checked[0].SHA256 {
				t.Fatalf("replica B reads %d bytes, %v", len(got.Data), err)
			}
			if again, err := b.Put(ctx, "alice", "s1", checked[0]); err != nil || again != id {
				t.Fatalf("the same artifact through B: %q %v", again, err)
			}
			if n, c := usage(t, b, "alice"); n != int64(len(big.Data)) || c != 1 {
				t.Fatalf("alice's usage through B: %d bytes, %d artifacts", n, c)
			}
			if _, err := a.Put(ctx, "alice", "s1", art("outputs/next.bin", 14<<20)); core.CodeOf(err) != core.ErrQuota {
				t.Fatalf("past alice's 24 MiB through A: %v", err)
			}
			for _, c := range []struct{ owner, session string }{{"bob", "s1"}, {"alice", ""}, {"alice", "s2"}} {
				if ok, err := b.Exists(ctx, c.owner, c.session, id); ok || err != nil {
					t.Errorf("%s/%q sees alice's artifact: %v %v", c.owner, c.session, ok, err)
				}
				if _, err := b.Get(ctx, c.owner, c.session, id); !errors.Is(err, core.ErrNotFound) {
					t.Errorf("%s/%q reads alice's artifact: %v", c.owner, c.session, err)
				}
			}
			if ok, err := a.Exists(ctx, "alice", "s1", id); !ok || err != nil {
				t.Errorf("Exists: %v %v", ok, err)
			}
		})
	}
}
