package api

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

func art(name string, size int) core.Artifact {
	return core.Artifact{Name: name, MIME: "text/plain", Size: int64(size), SHA256: "sha-" + name, Data: bytes.Repeat([]byte("x"), size)}
}

func testStore(clock *fakeClock, total, owner int64, count int) *artifactStore {
	return newArtifactStore(artifactLimits{ttl: time.Minute, maxBytes: total, ownerBytes: owner, ownerCount: count}, clock.Now)
}

func TestArtifactStoreTTLCapAndDedupe(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := testStore(clock, 100, 100, 100)
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
	c, _ := s.put("alice", "", art("c", 40)) // over alice's quota: her oldest, a, goes
	if _, ok := s.get("alice", "", a); ok {
		t.Fatal("oldest not evicted")
	}
	if s.total != 80 {
		t.Fatalf("total %d", s.total)
	}
	if id, warn := s.put("alice", "", art("huge", 101)); id != "" || !strings.Contains(warn, "budget") {
		t.Fatalf("artifact over the whole cap stored: %q", warn)
	}
	if id, _ := s.put("alice", "", core.Artifact{Name: "empty"}); id != "" {
		t.Fatal("artifact without bytes stored")
	}
	clock.Advance(30 * time.Second)
	d, _ := s.put("alice", "", art("d", 10))
	clock.Advance(31 * time.Second) // b and c expire, d does not
	for _, id := range []string{b, c} {
		if _, ok := s.get("alice", "", id); ok {
			t.Fatalf("%s not expired", id)
		}
	}
	if _, ok := s.get("alice", "", d); !ok || s.total != 10 {
		t.Fatalf("d missing or total %d", s.total)
	}
	clock.Advance(time.Hour)
	if _, ok := s.get("alice", "", d); ok || s.total != 0 || len(s.items) != 0 || len(s.dedupe) != 0 || len(s.owners) != 0 || s.byAge.Len() != 0 {
		t.Fatalf("store not empty: %d %d", s.total, len(s.items))
	}
}

// TestArtifactQuotaStaysWithinOwner: bob filling his quota and the store
// evicts only bob's artifacts; when the whole store is full, bob's new
// artifacts are refused with a warning and alice's stay.
func TestArtifactQuotaStaysWithinOwner(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := testStore(clock, 100, 60, 3)
	a, _ := s.put("alice", "", art("a", 50))
	for i := range 20 {
		if id, _ := s.put("bob", "", art(fmt.Sprint("b", i), 10)); id == "" {
			t.Fatalf("bob's %d refused", i)
		}
		if _, n := s.usage("bob"); n > 3 {
			t.Fatalf("bob holds %d artifacts over his count quota", n)
		}
	}
	if _, ok := s.get("alice", "", a); !ok {
		t.Fatal("bob's writes evicted alice's artifact")
	}
	// carol fills the store to 95 of 100 (alice 50, bob 30, carol 15): a
	// 45-byte artifact of bob's does not fit even after his own are gone,
	// and is refused rather than taking alice's or carol's room
	cid, _ := s.put("carol", "", art("c", 15))
	id, warn := s.put("bob", "", art("big", 45))
	if id != "" || !strings.Contains(warn, "store is full") {
		t.Fatalf("over the total: id %q warn %q", id, warn)
	}
	if _, ok := s.get("alice", "", a); !ok {
		t.Fatal("a full store evicted alice's artifact")
	}
	if _, ok := s.get("carol", "", cid); !ok {
		t.Fatal("a full store evicted carol's artifact")
	}
	// a policy quota for bob
	s.lim.ownerQuota = func(o string) (int64, int) {
		if o == "bob" {
			return 20, 1
		}
		return 0, 0
	}
	if id, w := s.put("bob", "", art("q1", 10)); id == "" {
		t.Fatalf("q1: %s", w)
	}
	if b, n := s.usage("bob"); n != 1 || b != 10 {
		t.Fatalf("bob's policy quota not applied: %d bytes, %d", b, n)
	}
}

// TestArtifactStoreIsCheap: 30,000 inserts by one owner cost little CPU
// (the old store scanned every artifact per insert: 35 s).
func TestArtifactStoreIsCheap(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := testStore(clock, 256<<20, 64<<20, 1000)
	start := time.Now()
	for i := range 30000 {
		s.put("bob", "", core.Artifact{Name: fmt.Sprint("f", i), SHA256: fmt.Sprint(i), Data: []byte("x")})
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("30,000 inserts took %v", el)
	}
	if _, n := s.usage("bob"); n != 1000 {
		t.Fatalf("bob holds %d artifacts, quota 1000", n)
	}
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
