package main

import (
	"flag"

	"github.com/airlock-dev/airlock/internal/snapshots"
)

// registerSnapshots adds the session snapshot bounds (issue 30) of serve
// and worker: one snapshot's size and what one owner may keep.
func (f *stackFlags) registerSnapshots(fs *flag.FlagSet) {
	d := snapshots.DefaultConfig()
	fs.Int64Var(&f.snapConfig.MaxBytes, "snapshot-max-bytes", int64(envInt("AIRLOCK_SNAPSHOT_MAX_BYTES", int(d.MaxBytes))),
		"most bytes one session snapshot may take, namespace and work folder (env AIRLOCK_SNAPSHOT_MAX_BYTES)")
	fs.Int64Var(&f.snapConfig.Quota, "snapshot-quota", int64(envInt("AIRLOCK_SNAPSHOT_QUOTA", int(d.Quota))),
		"most bytes of snapshots one API key may keep; more is refused with quota (env AIRLOCK_SNAPSHOT_QUOTA)")
}
