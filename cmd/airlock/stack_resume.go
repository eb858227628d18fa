package main

import (
	"cmp"
	"context"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/sandbox"
)

// resumes are the sessions' resume records in the flags' state store
// (issue 30).
func (f *stackFlags) resumes() *snapshots.Resumes {
	return snapshots.NewResumes(f.snapState, snapshots.New(f.snapState, f.snapConfig, nil))
}

// resumeConfig is the Keeper's configuration of sessions that outlive
// their container: hibernation, saves at shutdown, automatic snapshots.
// The API's session records are marked hibernated through a record store
// that reads them whatever their idle time (the API's own idle TTL
// decides for it) and keeps the sandbox's maximum life.
func (f *stackFlags) resumeConfig() snapshots.ResumeConfig {
	d := sandbox.DefaultConfig()
	marker := sessionrecords.New(f.snapState, 365*24*time.Hour, d.SessionMaxLife, nil)
	// Past the session idle time the API's record is gone: hibernating
	// later would save a session nobody can call.
	after := min(f.hibernateAfter, d.SessionIdle)
	return snapshots.ResumeConfig{Resumes: f.resumes(), Records: marker, HibernateAfter: after, AutoMaxBytes: f.autoSnapMax, AutoQuiet: f.autoSnapQuiet}
}

// saveSessions is the worker's OnStop: it saves and frees every live
// session (at most grace, default 30 s, for all of them together), so
// their next calls resume on another worker.
func (s *stack) saveSessions(k *snapshots.Keeper, grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(grace, 30*time.Second))
	defer cancel()
	start := time.Now()
	saved, failed := k.HibernateAll(ctx)
	if saved+failed > 0 {
		s.log.Info("sessions saved for their next calls to resume elsewhere", "saved", saved, "not_saved", failed, "ms", time.Since(start).Milliseconds())
	}
}

// redactingSnapshots is a worker's redacting engine (--secrets-file) with
// the sandbox's snapshot operations and session list, so the Keeper over
// it logs calls as redacted as their callers saw them.
type redactingSnapshots struct {
	redactingEngine
	se snapshots.Engine
}

// SnapshotSession is the sandbox's.
func (r redactingSnapshots) SnapshotSession(ctx context.Context, owner, id string, maxBytes int64, sink core.SnapshotSink) (core.SnapshotReport, error) {
	return r.se.SnapshotSession(ctx, owner, id, maxBytes, sink)
}

// RestoreSession is the sandbox's.
func (r redactingSnapshots) RestoreSession(ctx context.Context, owner, id, mode string, maxBytes int64, src core.SnapshotSource) (core.SnapshotReport, error) {
	return r.se.RestoreSession(ctx, owner, id, mode, maxBytes, src)
}

// Sessions is the sandbox's list of live sessions (for hibernation).
func (r redactingSnapshots) Sessions(owner string) []core.SessionInfo {
	if l, ok := r.se.(snapshots.SessionLister); ok {
		return l.Sessions(owner)
	}
	return nil
}
