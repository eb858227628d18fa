package snapshots

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/storetest"
)

// TestContract runs the snapshots on every backend: parts come back as
// written across chunk boundaries, another owner sees nothing, the bound
// and the per-owner quota refuse (too_large, quota) and give the bytes
// back, delete frees the quota, the call log keeps its calls in order.
func TestContract(t *testing.T) {
	for name, open := range storetest.Backends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			s := New(st, Config{MaxBytes: 3 * ChunkBytes, Quota: 4 * ChunkBytes}, nil)
			ns := bytes.Repeat([]byte("n"), ChunkBytes+123)
			work := []byte("tar")
			w, err := s.Create(ctx, "alice", "snap1")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range [][]byte{ns[:1000], ns[1000:]} {
				if err := w.Write(ctx, "ns", c); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Write(ctx, "work", work); err != nil {
				t.Fatal(err)
			}
			calls := []Call{{Code: "x = 1", Status: core.StatusOK}}
			m, err := w.Commit(ctx, Meta{Session: "s1", Calls: calls, Report: core.SnapshotReport{Skipped: []core.SnapshotSkip{{Name: "f", Type: "TextIOWrapper", Reason: "open file"}}}})
			if err != nil || m.Bytes != int64(len(ns)+len(work)) || m.Parts["ns"].Chunks != 2 {
				t.Fatalf("commit: %+v %v", m, err)
			}
			got, err := s.Get(ctx, "alice", "snap1")
			if err != nil || len(got.Calls) != 1 || got.Report.Skipped[0].Name != "f" {
				t.Fatalf("get: %+v %v", got, err)
			}
			var back bytes.Buffer
			if err := s.Read(ctx, got, "ns", func(c []byte) error { back.Write(c); return nil }); err != nil || !bytes.Equal(back.Bytes(), ns) {
				t.Fatalf("read ns: %d bytes, %v", back.Len(), err)
			}
			if _, err := s.Get(ctx, "bob", "snap1"); core.CodeOf(err) != core.ErrNotFound {
				t.Fatalf("bob reads alice's snapshot: %v", err)
			}
			if l, _ := s.List(ctx, "bob"); len(l) != 0 {
				t.Fatalf("bob lists %d snapshots", len(l))
			}
			if err := s.Delete(ctx, "bob", "snap1"); core.CodeOf(err) != core.ErrNotFound {
				t.Fatalf("bob deletes alice's snapshot: %v", err)
			}
			// Over the snapshot's bound: too_large, nothing kept.
			w2, _ := s.Create(ctx, "bob", "big")
			err = w2.Write(ctx, "ns", make([]byte, 3*ChunkBytes+1))
			if core.CodeOf(err) != core.ErrTooLarge {
				t.Fatalf("over the bound: %v", err)
			}
			w2.Abort(ctx)
			if u, _ := s.Usage(ctx, "bob"); u != 0 {
				t.Fatalf("bob's usage after an abort: %d", u)
			}
			// Over alice's quota: quota.
			w3, _ := s.Create(ctx, "alice", "snap2")
			err = w3.Write(ctx, "ns", make([]byte, 3*ChunkBytes))
			if !errors.Is(err, core.ErrQuota) {
				t.Fatalf("over the quota: %v", err)
			}
			w3.Abort(ctx)
			if u, _ := s.Usage(ctx, "alice"); u != m.Bytes {
				t.Fatalf("alice's usage: %d, want %d", u, m.Bytes)
			}
			if err := s.Delete(ctx, "alice", "snap1"); err != nil {
				t.Fatal(err)
			}
			if u, _ := s.Usage(ctx, "alice"); u != 0 {
				t.Fatalf("alice's usage after delete: %d", u)
			}
			if _, err := s.Get(ctx, "alice", "snap1"); core.CodeOf(err) != core.ErrNotFound {
				t.Fatalf("a deleted snapshot: %v", err)
			}
			log := NewCallLog(st)
			if cs, err := log.Calls(ctx, "alice", "none"); err != nil || len(cs) != 0 {
				t.Fatalf("an empty log: %v %v", cs, err)
			}
			for i := range 3 {
				if err := log.Append(ctx, "alice", "s1", CallOf(core.Request{Code: string(rune('a' + i))}, core.Result{Status: core.StatusOK, Stdout: "out"}, time.Now())); err != nil {
					t.Fatal(err)
				}
			}
			cs, err := log.Calls(ctx, "alice", "s1")
			if err != nil || len(cs) != 3 || cs[2].Code != "c" || cs[0].StdoutSHA256 == "" {
				t.Fatalf("log: %+v %v", cs, err)
			}
			if cs, _ := log.Calls(ctx, "bob", "s1"); len(cs) != 0 {
				t.Fatal("bob reads alice's call log")
			}
		})
	}
}
