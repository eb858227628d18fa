package api

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

func art(name string, size int) core.Artifact {
	return core.Artifact{Name: name, MIME: "text/plain", Size: int64(size), SHA256: "sha-" + name, Data: bytes.Repeat([]byte("x"), size)}
}

func testStore(clock *fakeClock, total, owner int64, count int) *artifactStore {
	return newArtifactStore(artifactLimits{ttl: time.Minute, maxBytes: total, ownerBytes: owner, ownerCount: count}, state.NewMemory(clock.Now), clock.Now)
}

func TestArtifactStoreTTLCapAndDedupe(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := testStore(clock, 200, 100, 100)
	a, _ := s.put("alice", "", art("a", 40))
	b, _ := s.put("alice", "", art("b", 40))
	if _, ok := s.get("alice", "", a); !ok {
		t.Fatal("a missing")
	}
	if _, ok := s.get("bob", "", a); ok {
		t.Fatal("bob read alice's artifact")
	}
	if _, ok := s.get("alice", "ses_1", a); ok {
		t.Fatal("one-shot artifact found under a session")
	}
	if again, _ := s.put("alice", "", art("a", 40)); again != a {
		t.Fatal("identical artifact stored twice")
	}
	if c, e := s.put("alice", "", art("c", 40)); c != "" || e == nil || e.Code != core.ErrQuota { // over alice's quota: refused, a stays
		t.Fatalf("over the quota: id %q, %v", c, e)
	}
	if _, ok := s.get("alice", "", a); !ok {
		t.Fatal("a refused artifact evicted an older one")
	}
	if s.total != 80 {
		t.Fatalf("total %d", s.total)
	}
	if id, e := s.put("alice", "", art("huge", 101)); id != "" || e.Code != core.ErrTooLarge || !strings.Contains(e.Message, "budget") {
		t.Fatalf("artifact over the whole cap stored: %v", e)
	}
	if id, _ := s.put("alice", "", core.Artifact{Name: "empty"}); id != "" {
		t.Fatal("artifact without bytes stored")
	}
	clock.Advance(30 * time.Second)
	d, _ := s.put("alice", "", art("d", 10))
	clock.Advance(31 * time.Second) // a and b expire, d does not
	for _, id := range []string{a, b} {
		if _, ok := s.get("alice", "", id); ok {
			t.Fatalf("%s not expired", id)
		}
	}
	if _, ok := s.get("alice", "", d); !ok || s.total != 10 {
		t.Fatalf("d missing or total %d", s.total)
	}
	clock.Advance(time.Hour)
	if _, ok := s.get("alice", "", d); ok || s.total != 0 || len(s.items) != 0 || len(s.dedupe) != 0 || s.byAge.Len() != 0 {
		t.Fatalf("store not empty: %d %d", s.total, len(s.items))
	}
	if b, n := s.usage("alice"); b != 0 || n != 0 {
		t.Fatalf("expired artifacts still counted: %d bytes, %d", b, n)
	}
}

// TestArtifactQuotaStaysWithinOwner: bob filling his quota gets his new
// artifacts refused (quota) and never touches alice's; when the whole
// store is full, new artifacts are refused (busy) and alice's stay.
func TestArtifactQuotaStaysWithinOwner(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := testStore(clock, 100, 60, 3)
	a, _ := s.put("alice", "", art("a", 50))
	for i := range 20 {
		id, e := s.put("bob", "", art(fmt.Sprint("b", i), 10))
		if (id != "") != (i < 3) || (i >= 3 && e.Code != core.ErrQuota) {
			t.Fatalf("bob's %d: id %q, %v", i, id, e)
		}
		if _, n := s.usage("bob"); n > 3 {
			t.Fatalf("bob holds %d artifacts over his count quota", n)
		}
	}
	if _, ok := s.get("alice", "", a); !ok {
		t.Fatal("bob's writes evicted alice's artifact")
	}
	// carol fills the store to 95 of 100 (alice 50, bob 30, carol 15): a
	// 45-byte artifact of dave's does not fit and is refused rather than
	// taking alice's or carol's room
	cid, _ := s.put("carol", "", art("c", 15))
	id, e := s.put("dave", "", art("big", 45))
	if id != "" || e.Code != core.ErrBusy || !strings.Contains(e.Message, "store is full") {
		t.Fatalf("over the total: id %q, %v", id, e)
	}
	if _, ok := s.get("alice", "", a); !ok {
		t.Fatal("a full store evicted alice's artifact")
	}
	if _, ok := s.get("carol", "", cid); !ok {
		t.Fatal("a full store evicted carol's artifact")
	}
	if b, n := s.usage("dave"); b != 0 || n != 0 {
		t.Fatalf("a refused artifact is counted: %d bytes, %d", b, n)
	}
	// a policy quota for erin
	s.lim.ownerQuota = func(o string) (int64, int) {
		if o == "erin" {
			return 20, 1
		}
		return 0, 0
	}
	if id, e := s.put("erin", "", art("q1", 1)); id == "" {
		t.Fatalf("q1: %v", e)
	}
	if id, e := s.put("erin", "", art("q2", 1)); id != "" || e.Code != core.ErrQuota || e.Details["budget"] != "artifact_count" {
		t.Fatalf("erin's policy count quota not applied: %q %v", id, e)
	}
	if b, n := s.usage("erin"); n != 1 || b != 1 {
		t.Fatalf("erin's usage: %d bytes, %d", b, n)
	}
	// past the TTL and one window, bob's quota is free again
	clock.Advance(time.Minute + s.quota.window)
	if id, e := s.put("bob", "", art("later", 10)); id == "" {
		t.Fatalf("bob's quota did not free up after his artifacts expired: %v", e)
	}
}

// TestArtifactStoreIsCheap: 30,000 inserts by one owner cost little CPU
// (the old store scanned every artifact per insert: 35 s). CPU time of the
// process, not wall time, so a loaded machine does not fail it.
func TestArtifactStoreIsCheap(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := testStore(clock, 256<<20, 64<<20, 1000)
	start := processCPU(t)
	for i := range 30000 {
		s.put("bob", "", core.Artifact{Name: fmt.Sprint("f", i), SHA256: fmt.Sprint(i), Data: []byte("x")})
	}
	if el := processCPU(t) - start; el > 2*time.Second {
		t.Fatalf("30,000 inserts took %v of CPU", el)
	}
	if _, n := s.usage("bob"); n != 1000 {
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

func TestCheckArtifacts(t *testing.T) {
	png := core.Artifact{Name: "fig.png", MIME: "text/html", Size: 999, SHA256: "forged", Data: []byte("\x89PNG")}
	in := []core.Artifact{png}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\x00b", "a\nb", strings.Repeat("n", 300), "a\\b", "dir/"} {
		in = append(in, core.Artifact{Name: bad, Data: []byte("x")})
	}
	out, warns := checkArtifacts(in, 100, 1<<20)
	if len(out) != 1 || len(warns) != len(in)-1 {
		t.Fatalf("kept %d, %d warnings: %q", len(out), len(warns), warns)
	}
	a := out[0]
	if a.MIME != "image/png" || a.Size != 4 || a.SHA256 == "forged" || len(a.SHA256) != 64 {
		t.Fatalf("metadata not recomputed: %+v", a)
	}
	many := make([]core.Artifact, 50)
	for i := range many {
		many[i] = core.Artifact{Name: fmt.Sprint("f", i, ".txt"), Data: []byte("abc")}
	}
	out, warns = checkArtifacts(many, 10, 1<<20)
	if len(out) != 10 || len(warns) != 1 || !strings.Contains(warns[0], "limit of 10") {
		t.Fatalf("count: %d %q", len(out), warns)
	}
	out, _ = checkArtifacts(many, 50, 7)
	if len(out) != 2 {
		t.Fatalf("call bytes: kept %d", len(out))
	}
}
