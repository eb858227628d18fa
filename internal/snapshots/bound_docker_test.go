package snapshots

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// TestSnapshotOverItsBoundIsTooLarge: a snapshot whose namespace, or whose
// /work folder, is over the snapshot's byte bound (--snapshot-max-bytes) is
// refused as core.ErrTooLarge (413 too_large over the API, as the README
// says), not as bad input; the session keeps running.
func TestSnapshotOverItsBoundIsTooLarge(t *testing.T) {
	k, _, _ := dockerKeeper(t, Config{MaxBytes: 2 << 20, Quota: 1 << 30})
	ctx := context.Background()
	id := open(t, k, "alice")
	call(t, k, "alice", id, "import numpy as np\nbig = np.zeros(1_000_000)")
	_, err := k.Handle(ctx, core.Request{Op: core.OpSessionSnapshot, Owner: "alice", SessionID: id, SnapshotID: "ns-big"})
	if core.CodeOf(err) != core.ErrTooLarge {
		t.Fatalf("namespace over the bound: %v (code %q), want too_large", err, core.CodeOf(err))
	}
	call(t, k, "alice", id, "del big\nopen('/work/blob.bin', 'wb').write(b'x' * (3 << 20))")
	_, err = k.Handle(ctx, core.Request{Op: core.OpSessionSnapshot, Owner: "alice", SessionID: id, SnapshotID: "work-big"})
	if core.CodeOf(err) != core.ErrTooLarge {
		t.Fatalf("/work over the bound: %v (code %q), want too_large", err, core.CodeOf(err))
	}
	if got := call(t, k, "alice", id, "print(len(open('/work/blob.bin', 'rb').read()))").Stdout; got != "3145728\n" {
		t.Fatalf("the session after the refusals: %q", got)
	}
}
