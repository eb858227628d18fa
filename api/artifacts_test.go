package api

import (
	"bytes"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
)

func art(name string, size int) core.Artifact {
	return core.Artifact{Name: name, MIME: "text/plain", Size: int64(size), SHA256: "sha-" + name, Data: bytes.Repeat([]byte("x"), size)}
}

func TestArtifactStoreTTLCapAndDedupe(t *testing.T) {
	clock := &fakeClock{now: t0}
	s := newArtifactStore(time.Minute, 100, clock.Now)
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
	c, _ := s.put("alice", "", art("c", 40)) // over the cap: a goes
	if _, ok := s.get("alice", "", a); ok {
		t.Fatal("oldest not evicted")
	}
	if s.total != 80 {
		t.Fatalf("total %d", s.total)
	}
	if _, ok := s.put("alice", "", art("huge", 101)); ok {
		t.Fatal("artifact over the whole cap stored")
	}
	if _, ok := s.put("alice", "", core.Artifact{Name: "empty"}); ok {
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
	if _, ok := s.get("alice", "", d); ok || s.total != 0 || len(s.items) != 0 || s.order != nil {
		t.Fatalf("store not empty: %d %d", s.total, len(s.items))
	}
}
