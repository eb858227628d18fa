package main

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/snapshots"
)

// sectionSnapshots is issue 30's bench: snapshot and restore (time and
// stored size) of a session holding a ~100 MiB DataFrame and of a small
// namespace, through the worker's Keeper into the embedded (Bolt) state
// store, on real Docker. Each is measured snapRounds times; the restore
// goes into a fresh session each time.
func sectionSnapshots(ctx context.Context, o options, q *quieter, rep *report) error {
	eng, st, done, err := engineWithStore(ctx, o, "snap-")
	if err != nil {
		return err
	}
	defer done()
	k := snapshots.NewKeeper(eng, snapshots.New(st, snapshots.DefaultConfig(), nil), snapshots.NewCallLog(st), nil)
	lim := core.Limits{Memory: 1536 << 20, TmpfsBytes: 768 << 20, FileSize: 768 << 20, Timeout: 5 * time.Minute}
	open := func() (string, error) {
		res, err := k.Handle(ctx, core.Request{Op: core.OpSessionOpen, Owner: "bench", Limits: lim})
		return res.SessionID, err
	}
	cases := []struct{ name, code string }{
		{"~100 MiB DataFrame (13.1M float64 rows)", "import numpy as np, pandas as pd\ndf = pd.DataFrame({'v': np.random.rand(13_100_000)})"},
		{"small namespace (ints, a dict, a lambda, a class, a 100-row frame)", "import pandas as pd\nx = 1\nd = {'a': [1, 2, 3]}\nsq = lambda v: v * v\nclass P:\n    pass\np = P()\ndf = pd.DataFrame({'a': range(100)})"},
	}
	const snapRounds = 3
	t := &table{title: "11. Session snapshots — snapshot and restore through the worker into the embedded state store",
		head: []string{"session", "stored size", "snapshot p50", "snapshot max", "restore p50", "restore max"}}
	for ci, c := range cases {
		id, err := open()
		if err != nil {
			return err
		}
		if res, err := k.Handle(ctx, core.Request{Owner: "bench", SessionID: id, Code: c.code, Limits: core.Limits{Timeout: 5 * time.Minute}}); err != nil || res.Status != core.StatusOK {
			return fmt.Errorf("set up %s: %v %s %s", c.name, err, res.Status, res.Stderr)
		}
		snap, rest := &series{name: "snapshot"}, &series{name: "restore"}
		var size int64
		for r := range snapRounds {
			_ = q.wait(ctx)
			sid := fmt.Sprintf("b%d-%d", ci, r)
			t0 := time.Now()
			res, err := k.Handle(ctx, core.Request{Op: core.OpSessionSnapshot, Owner: "bench", SessionID: id, SnapshotID: sid})
			if err != nil {
				return fmt.Errorf("snapshot %s: %w", c.name, err)
			}
			snap.d = append(snap.d, time.Since(t0))
			size = res.Snapshot.Bytes
			nid, err := open()
			if err != nil {
				return err
			}
			_ = q.wait(ctx)
			t0 = time.Now()
			if _, err := k.Handle(ctx, core.Request{Op: core.OpSessionRestore, Owner: "bench", SessionID: nid, SnapshotID: sid}); err != nil {
				return fmt.Errorf("restore %s: %w", c.name, err)
			}
			rest.d = append(rest.d, time.Since(t0))
			_, _ = k.Handle(ctx, core.Request{Op: core.OpSessionClose, Owner: "bench", SessionID: nid})
			_ = snapshots.New(st, snapshots.DefaultConfig(), nil).Delete(ctx, "bench", sid)
		}
		_, _ = k.Handle(ctx, core.Request{Op: core.OpSessionClose, Owner: "bench", SessionID: id})
		t.row(c.name, fmt.Sprintf("%.1f MiB", float64(size)/(1<<20)), ms(snap.pct(50)), ms(snap.max()), ms(rest.pct(50)), ms(rest.max()))
	}
	t.note("Snapshot: the kernel pickles its namespace (C pickle; dill for what the session defined), the controller tars /work, Airlock reads both in 4 MiB chunks and stores them (Bolt, fsync'd). Restore: the chunks written into a fresh session's container, /work unpacked, the namespace loaded. %d rounds each.", snapRounds)
	t.note("Wake latency of a hibernated session and the cost of the snapshot after each call: section 13.")
	rep.table(t)
	return nil
}
