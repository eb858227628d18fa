package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/wire"
)

// infoTimeout bounds asking the sandbox about a session for a view; past
// it the view carries the record without the live fields.
const infoTimeout = 2 * time.Second

// Backend opens, closes and transfers files into the sandbox's sessions.
// Errors are matched with errors.Is against core.ErrSessionNotFound
// (404), ErrBusy (429), ErrTooLarge (413), ErrFile (400) and
// ErrUnavailable or ErrImageMissing (503); anything else is a 500.
type Backend interface {
	// Open creates a session owned by owner and returns its id. With
	// background, processes its calls start may outlive the calls
	// (core.Request.Background); otherwise the sandbox stops them.
	Open(ctx context.Context, owner string, limits core.Limits, background bool) (string, error)
	// Close destroys the session.
	Close(ctx context.Context, owner, id string) error
	// PutFile streams body to path, relative to the session's work folder,
	// in bounded chunks (never the whole file in memory) and returns the
	// bytes written. A read error of body, such as the *http.MaxBytesError
	// of the upload cap, is returned as is, after the partial file was
	// truncated.
	PutFile(ctx context.Context, owner, id, path string, body io.Reader) (int64, error)
	// GetFile streams path, relative to the session's work folder, in
	// bounded chunks. open is called once with the file's size before the
	// first byte is written, and not at all when the file cannot be read,
	// so the caller can still answer with an error. It returns the bytes
	// written.
	GetFile(ctx context.Context, owner, id, path string, open func(size int64) io.Writer) (int64, error)
	// ListFiles lists the folder path ("" for the work folder) of the
	// session: names, types, sizes and modification times.
	ListFiles(ctx context.Context, owner, id, path string) ([]core.FileEntry, error)
	// InterruptSession raises KeyboardInterrupt in the session's running
	// call and reports whether one was running.
	InterruptSession(ctx context.Context, owner, id string) (bool, error)
	// RestartSession replaces the session's Python process; files are kept.
	RestartSession(ctx context.Context, owner, id string) error
	// SessionInfo describes the live session: state, calls, resource use.
	SessionInfo(ctx context.Context, owner, id string) (core.SessionInfo, error)
}

// Service keeps the sandbox's sessions and their records together. It is
// safe for concurrent use.
type Service struct {
	backend Backend // nil: records only, no live state
	records *sessionrecords.Store
	resumes *snapshots.Resumes // nil: no session outlives its container
	now     func() time.Time
	log     *slog.Logger
}

// New returns the service over backend (nil for none) and records; now is
// the clock (nil: time.Now), log receives what the sandbox failed to
// answer (nil: discarded).
func New(backend Backend, records *sessionrecords.Store, now func() time.Time, log *slog.Logger) *Service {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{backend: backend, records: records, now: now, log: log}
}

// notFound is the error of a session that does not exist (any more).
func notFound() error { return core.Errorf("", core.ErrNotFound, "session not found") }

// gone reports an error meaning the sandbox no longer has the session.
func gone(err error) bool {
	return errors.Is(err, core.ErrNotFound) || errors.Is(err, core.ErrSessionLost)
}

// Open opens a session of owner with limits (checked against its ceiling)
// when its budgets b allow one more (zero limits count as the defaults d
// give them), records it and returns its record.
func (s *Service) Open(ctx context.Context, owner string, limits core.Limits, background bool, b keys.Budget, d core.Limits) (wire.Session, error) {
	return s.OpenIn(ctx, owner, environments.Target{}, limits, background, b, d)
}

// EnvOpener is a Backend that opens sessions in an environment (issue 28).
type EnvOpener interface {
	// OpenIn is Backend.Open in the environment env.
	OpenIn(ctx context.Context, owner string, env environments.Target, limits core.Limits, background bool) (string, error)
}

// OpenIn is Open in the environment env (the zero Target: the built-in
// python one); a backend that cannot open sessions in another
// environment refuses one that is not built in.
func (s *Service) OpenIn(ctx context.Context, owner string, env environments.Target, limits core.Limits, background bool, b keys.Budget, d core.Limits) (wire.Session, error) {
	if err := s.records.CheckBudget(ctx, owner, limits, b, d); err != nil {
		var be *sessionrecords.BudgetError
		if !errors.As(err, &be) {
			return wire.Session{}, err
		}
		// Records of sessions the sandbox lost (a restart) must not hold
		// the budget: listing forgets them; then check again.
		s.List(ctx, owner)
		if err := s.records.CheckBudget(ctx, owner, limits, b, d); err != nil {
			return wire.Session{}, err
		}
	}
	var id string
	var err error
	if eo, ok := s.backend.(EnvOpener); ok && env.Name != "" {
		id, err = eo.OpenIn(ctx, owner, env, limits, background)
	} else if env.Image != "" || env.Name == environments.Shell {
		err = core.Errorf("sessions", core.ErrUnavailable, fmt.Sprintf("this server cannot open sessions in environment %q", env.Name))
	} else {
		id, err = s.backend.Open(ctx, owner, limits, background)
	}
	if err != nil {
		return wire.Session{}, err
	}
	rec, err := s.records.AddIn(ctx, owner, id, env.Name, limits, background)
	if err != nil { // the sandbox has it but no replica could find it: undo
		_ = s.backend.Close(context.WithoutCancel(ctx), owner, id)
		return wire.Session{}, err
	}
	return body(rec), nil
}

// Close destroys session rec; a session the sandbox no longer has loses
// its record all the same.
func (s *Service) Close(ctx context.Context, rec sessionrecords.Record) error {
	err := s.backend.Close(ctx, rec.Owner, rec.ID)
	if err == nil || errors.Is(err, core.ErrNotFound) {
		s.records.Remove(ctx, rec.Owner, rec.ID)
	}
	return err
}

// failed is err of an operation on rec: when the sandbox says the session
// is gone its record is dropped and the error is not_found.
func (s *Service) failed(ctx context.Context, rec sessionrecords.Record, err error) error {
	if gone(err) && s.resumable(ctx, rec) {
		return err
	}
	if gone(err) {
		s.records.Remove(context.WithoutCancel(ctx), rec.Owner, rec.ID)
		return notFound()
	}
	return err
}

// body is a session's record as answered.
func body(r sessionrecords.Record) wire.Session {
	return wire.Session{ID: r.ID, Created: r.Created, LastUsed: r.LastUsed, ExpiresAt: r.ExpiresAt, Background: r.Background, Environment: r.Environment}
}

// View is rec as GET answers it: the record and, where the sandbox
// answered in time, its live state and resource use (else State is
// unknown). A session the sandbox no longer has is not_found.
func (s *Service) View(ctx context.Context, rec sessionrecords.Record) (wire.Session, error) {
	v := body(rec)
	v.CreatedAt, v.LastUsedAt, v.State = rec.Created, rec.LastUsed, wire.SessionUnknown
	v.AgeSeconds = s.now().Sub(rec.Created).Seconds()
	if s.backend == nil {
		return v, nil
	}
	if rec.Hibernated && s.hibernated(ctx, rec) {
		v.State = wire.SessionHibernated
		return v, nil
	}
	ictx, cancel := context.WithTimeout(ctx, infoTimeout)
	defer cancel()
	info, err := s.backend.SessionInfo(ictx, rec.Owner, rec.ID)
	switch {
	case gone(err) && s.resumable(ctx, rec):
		v.State = wire.SessionHibernated // its container is gone, its snapshot is not
		return v, nil
	case gone(err):
		return v, s.failed(ctx, rec, err)
	case err != nil:
		s.log.Warn("sessions: session info failed", "owner", rec.Owner, "err", err)
		return v, nil // the record without the live fields
	}
	v.State = info.State
	n, cpu, mem := info.ExecCount, info.CPUMS, info.MemBytes
	v.ExecutionCount, v.CPUMS, v.MemBytes = &n, &cpu, &mem
	return v, nil
}

// List returns owner's sessions, oldest first, each viewed as View does
// (concurrently); the ones the sandbox no longer has are left out.
func (s *Service) List(ctx context.Context, owner string) []wire.Session {
	recs := s.records.List(ctx, owner)
	views := make([]wire.Session, len(recs))
	errs := make([]error, len(recs))
	var wg sync.WaitGroup
	for i, r := range recs {
		wg.Go(func() { views[i], errs[i] = s.View(ctx, r) })
	}
	wg.Wait()
	out := make([]wire.Session, 0, len(recs))
	for i, v := range views {
		if errs[i] == nil {
			out = append(out, v)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// Interrupt raises KeyboardInterrupt in rec's running call and reports
// whether one was running.
func (s *Service) Interrupt(ctx context.Context, rec sessionrecords.Record) (bool, error) {
	hit, err := s.backend.InterruptSession(ctx, rec.Owner, rec.ID)
	if gone(err) && s.resumable(ctx, rec) {
		return false, nil // hibernated: nothing runs
	}
	if err != nil {
		return false, s.failed(ctx, rec, err)
	}
	return hit, nil
}

// Restart replaces rec's Python process (files are kept) and returns its
// view.
func (s *Service) Restart(ctx context.Context, rec sessionrecords.Record) (wire.Session, error) {
	if err := s.backend.RestartSession(ctx, rec.Owner, rec.ID); err != nil {
		return wire.Session{}, s.failed(ctx, rec, err)
	}
	return s.View(ctx, rec)
}

// PutFile streams body to path in rec's work folder (see Backend.PutFile).
func (s *Service) PutFile(ctx context.Context, rec sessionrecords.Record, path string, body io.Reader) (int64, error) {
	n, err := s.backend.PutFile(ctx, rec.Owner, rec.ID, path, body)
	return n, s.forget(ctx, rec, err)
}

// GetFile streams path from rec's work folder (see Backend.GetFile).
func (s *Service) GetFile(ctx context.Context, rec sessionrecords.Record, path string, open func(size int64) io.Writer) (int64, error) {
	n, err := s.backend.GetFile(ctx, rec.Owner, rec.ID, path, open)
	return n, s.forget(ctx, rec, err)
}

// ListFiles lists every entry under root in rec's work folder (see walk).
func (s *Service) ListFiles(ctx context.Context, rec sessionrecords.Record, root string) (wire.FileList, error) {
	return walk(ctx, func(ctx context.Context, folder string) ([]core.FileEntry, error) {
		entries, err := s.backend.ListFiles(ctx, rec.Owner, rec.ID, folder)
		return entries, s.forget(ctx, rec, err)
	}, root)
}

// forget drops rec's record when the sandbox no longer knows the session,
// and returns err as is.
func (s *Service) forget(ctx context.Context, rec sessionrecords.Record, err error) error {
	if errors.Is(err, core.ErrNotFound) && !s.resumable(ctx, rec) {
		s.records.Remove(context.WithoutCancel(ctx), rec.Owner, rec.ID)
	}
	return err
}

// SetResumes lets the service keep the sessions that outlive their
// container (issue 30): one whose container is gone but which has a
// resume record is hibernated, not gone. Call before the service is used.
func (s *Service) SetResumes(r *snapshots.Resumes) { s.resumes = r }

// Hibernated reports whether rec's session is hibernated: its container
// freed on purpose and its state kept in a snapshot, so that anything
// that asks its kernel wakes it.
func (s *Service) Hibernated(ctx context.Context, rec sessionrecords.Record) bool {
	return rec.Hibernated && s.hibernated(ctx, rec)
}

// hibernated reports whether rec's session's resume record says its
// container was freed on purpose (and not woken since).
func (s *Service) hibernated(ctx context.Context, rec sessionrecords.Record) bool {
	if s.resumes == nil {
		return false
	}
	r, err := s.resumes.Get(ctx, rec.Owner, rec.ID)
	return err == nil && r.Hibernated
}

// resumable reports whether rec's session has a snapshot to wake from.
func (s *Service) resumable(ctx context.Context, rec sessionrecords.Record) bool {
	if s.resumes == nil {
		return false
	}
	_, err := s.resumes.Get(ctx, rec.Owner, rec.ID)
	return err == nil
}
