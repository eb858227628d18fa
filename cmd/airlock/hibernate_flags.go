package main

import (
	"flag"
	"time"
)

// defaultAutosnapshotMaxBytes bounds the snapshot taken after each session
// call by default: 64 MiB (see README, "Sessions that outlive their
// container", for what it costs).
const defaultAutosnapshotMaxBytes = 64 << 20

// defaultAutosnapshotQuiet is 0 by default: the snapshot is taken right
// after each call, before a next call can start. A quiet time keeps the
// snapshot off calls sent back to back, but a long call started within
// it holds the snapshot of the state before it until it ends, so a kill
// -9 meanwhile loses that state (README).
const defaultAutosnapshotQuiet time.Duration = 0

// registerHibernate adds the flags of sessions that outlive their
// container (issue 30) to serve and worker.
func (f *stackFlags) registerHibernate(fs *flag.FlagSet) {
	fs.DurationVar(&f.hibernateAfter, "hibernate-after", envDuration("AIRLOCK_HIBERNATE_AFTER", 15*time.Minute),
		"a session idle this long is saved (namespace and /work) and its container freed; its next call wakes it on any worker (0: never; at most the 15m session idle time; env AIRLOCK_HIBERNATE_AFTER)")
	fs.Int64Var(&f.autoSnapMax, "session-autosnapshot-max-bytes", int64(envInt("AIRLOCK_SESSION_AUTOSNAPSHOT_MAX_BYTES", defaultAutosnapshotMaxBytes)),
		"after each session call that ran, save the session off the caller's path when its namespace and /work fit in this many bytes, so a worker killed with kill -9 loses only the calls since (0: never; env AIRLOCK_SESSION_AUTOSNAPSHOT_MAX_BYTES)")
	fs.DurationVar(&f.autoSnapQuiet, "session-autosnapshot-quiet", envDuration("AIRLOCK_SESSION_AUTOSNAPSHOT_QUIET", defaultAutosnapshotQuiet),
		"take the snapshot after a session's calls once no call has ended for this long (at most 5s after the first unsaved call), so calls back to back never wait for it; a kill -9 before it is taken (within the quiet time, or during a long call started within it) loses those calls (0, the default: right after each call; env AIRLOCK_SESSION_AUTOSNAPSHOT_QUIET)")
}
