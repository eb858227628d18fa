// Package envservice is the environments service of the API (issue 28):
// it resolves the environment a session names, lists, gets, builds and
// removes environments for admin keys, and reads a build's events. It
// keeps nothing itself: records and event logs live in the state store
// (environments.Registry), images in the Docker daemon (builder.Manager).
package envservice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/wire"
)

// WarmFunc counts the warm containers of an image on this process's
// workers (nil: none run here).
type WarmFunc func(image string) int

// Service is the environments service. It is safe for concurrent use.
type Service struct {
	reg    *environments.Registry
	res    *environments.Resolver
	mgr    *builder.Manager // nil: no Docker here, builds and removals are unavailable
	warm   WarmFunc
	log    *slog.Logger
	builds sync.WaitGroup
	stop   context.CancelFunc
	ctx    context.Context
}

// New returns the service over reg, building with mgr (nil: this replica
// has no Docker daemon) and counting warm containers with warm (may be nil).
func New(reg *environments.Registry, mgr *builder.Manager, warm WarmFunc, log *slog.Logger) *Service {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{reg: reg, res: environments.NewResolver(reg), mgr: mgr, warm: warm, log: log, ctx: ctx, stop: cancel}
}

// Close cancels the builds in progress and waits for them to record their end.
func (s *Service) Close() {
	s.stop()
	s.builds.Wait()
}

// Resolve resolves name for a caller who may use what may accepts
// (environments.Resolver.Resolve).
func (s *Service) Resolve(ctx context.Context, name string, may func(string) bool) (environments.Target, error) {
	return s.res.Resolve(ctx, name, may)
}

// View is rec as the API answers it.
func (s *Service) View(rec environments.Record) wire.Environment {
	v := wire.Environment{Name: rec.Name, Builtin: rec.Builtin, Base: rec.Base, Status: string(rec.Status), Hash: rec.Hash,
		Image: rec.Image, Packages: rec.Packages, SizeBytes: rec.SizeBytes, AddedBytes: rec.AddedBytes,
		BuildSeconds: rec.BuildSeconds, BuildID: rec.BuildID, FailedStep: rec.FailedStep, Error: rec.Error,
		Created: rec.Created, Updated: rec.Updated}
	for _, c := range rec.Checks {
		v.Checks = append(v.Checks, wire.EnvironmentCheck{Name: c.Name, OK: c.OK, Detail: c.Detail})
	}
	if s.warm != nil && rec.Image != "" {
		v.Warm = s.warm(rec.Image)
	}
	return v
}

// List returns the built-in environments, then the custom ones by name.
func (s *Service) List(ctx context.Context) (wire.EnvironmentList, error) {
	var recs []environments.Record
	var err error
	if s.mgr != nil {
		recs, err = s.mgr.List(ctx)
	} else {
		recs, err = s.reg.List(ctx)
		sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
		recs = append([]environments.Record{
			{Name: environments.Python, Builtin: true, Base: environments.Python, Status: environments.StatusReady},
			{Name: environments.Shell, Builtin: true, Base: environments.Shell, Status: environments.StatusReady},
		}, recs...)
	}
	if err != nil {
		return wire.EnvironmentList{}, err
	}
	out := wire.EnvironmentList{Environments: make([]wire.Environment, 0, len(recs))}
	for _, r := range recs {
		out.Environments = append(out.Environments, s.View(r))
	}
	return out, nil
}

// Get returns the environment name (core.ErrNotFound naming it).
func (s *Service) Get(ctx context.Context, name string) (wire.Environment, error) {
	if environments.Builtin(name) && s.mgr == nil {
		return wire.Environment{Name: name, Builtin: true, Base: name, Status: string(environments.StatusReady)}, nil
	}
	var rec environments.Record
	var err error
	if s.mgr != nil {
		rec, err = s.mgr.Get(ctx, name)
	} else {
		rec, _, err = s.reg.Get(ctx, name)
	}
	if err != nil {
		return wire.Environment{}, err
	}
	return s.View(rec), nil
}

// Remove deletes the environment name and its images.
func (s *Service) Remove(ctx context.Context, name string) error {
	if s.mgr == nil {
		return core.Errorf("environments", core.ErrUnavailable, "this server has no Docker daemon to remove images with")
	}
	return s.mgr.Remove(ctx, name)
}

// Create checks req and starts its build in the background; it returns
// once the build has begun (status building, with its build id for the
// events) or has ended (a no-op: ready; or failed), at most after a few
// seconds. A spec or content that is refused is core.ErrInvalid naming
// what is wrong; a build already running core.ErrConflict.
func (s *Service) Create(ctx context.Context, req wire.CreateEnvironmentRequest) (wire.Environment, error) {
	if s.mgr == nil {
		return wire.Environment{}, core.Errorf("environments", core.ErrUnavailable, "this server has no Docker daemon to build environments with")
	}
	if len(req.Spec) == 0 {
		return wire.Environment{}, core.Errorf("environments", core.ErrInvalid, `"spec" is required`)
	}
	spec, err := environments.Parse(req.Spec)
	if err != nil {
		return wire.Environment{}, err
	}
	blobs := func(in []wire.EnvironmentBlob) []environments.Blob {
		out := make([]environments.Blob, 0, len(in))
		for _, b := range in {
			out = append(out, environments.Blob{Name: b.Name, Data: b.Content, Exec: b.Executable})
		}
		return out
	}
	src, err := environments.NewSource(spec, blobs(req.Wheels), blobs(req.Files))
	if err != nil {
		return wire.Environment{}, err
	}
	prev, _, _ := s.reg.Get(ctx, spec.Name)
	type outcome struct {
		rec environments.Record
		err error
	}
	done := make(chan outcome, 1)
	s.builds.Add(1)
	go func() {
		defer s.builds.Done()
		bctx, cancel := context.WithTimeout(s.ctx, time.Hour)
		defer cancel()
		rec, _, err := s.mgr.Build(bctx, src, nil)
		if err != nil {
			s.log.Warn("environments: build failed", "env", spec.Name, "err", err)
		}
		done <- outcome{rec, err}
	}()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case o := <-done:
			var be *environments.BuildError
			if o.err != nil && !errors.As(o.err, &be) { // refused before building: no record of it
				return wire.Environment{}, o.err
			}
			return s.View(o.rec), nil
		case <-tick.C:
			rec, _, err := s.reg.Get(ctx, spec.Name)
			if err == nil && rec.Status == environments.StatusBuilding && rec.BuildID != prev.BuildID {
				return s.View(rec), nil
			}
		case <-deadline.C:
			rec, _, err := s.reg.Get(ctx, spec.Name)
			if err != nil {
				return wire.Environment{}, fmt.Errorf("environments: the build of %s did not start in time: %w", spec.Name, err)
			}
			return s.View(rec), nil
		case <-ctx.Done():
			return wire.Environment{}, core.E("environments", core.ErrCanceled, ctx.Err())
		}
	}
}

// Events returns up to limit events of name's latest build after seq
// after, waiting up to wait for one; last reports that the build has ended
// (its done or failed event is among them, or was before).
func (s *Service) Events(ctx context.Context, name string, after int64, limit int, wait time.Duration) ([]wire.EnvironmentEvent, []int64, bool, error) {
	rec, _, err := s.reg.Get(ctx, name)
	if err != nil {
		return nil, nil, false, err
	}
	if rec.BuildID == "" {
		return nil, nil, true, nil
	}
	evs, seqs, err := s.reg.Events(ctx, name, rec.BuildID, after, limit, wait)
	if err != nil {
		return nil, nil, false, err
	}
	out := make([]wire.EnvironmentEvent, 0, len(evs))
	last := rec.Status != environments.StatusBuilding && len(evs) == 0
	for _, ev := range evs {
		w := wire.EnvironmentEvent{Type: string(ev.Type), Time: ev.Time, Step: ev.Step, Line: ev.Line, Progress: ev.Progress, Error: ev.Error}
		if ev.Record != nil {
			v := s.View(*ev.Record)
			w.Environment = &v
		}
		if ev.Type == environments.EventDone || ev.Type == environments.EventFailed {
			last = true
		}
		out = append(out, w)
	}
	return out, seqs, last, nil
}
