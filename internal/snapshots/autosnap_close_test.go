package snapshots

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
)

// cutEngine is a session engine whose snapshot waits until the test lets
// it fail, as a snapshot does when the session's container is closed
// under it (the link's read fails).
type cutEngine struct {
	gateEngine
	entered chan struct{}
	fail    chan error
}

func (e *cutEngine) SnapshotSession(context.Context, string, string, int64, core.SnapshotSink) (core.SnapshotReport, error) {
	e.entered <- struct{}{}
	return core.SnapshotReport{}, <-e.fail
}

// logRecords is a slog handler that keeps every record's level and message.
type logRecords struct {
	mu   sync.Mutex
	recs []string
}

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecords) WithGroup(string) slog.Handler            { return h }
func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Level.String()+" "+r.Message)
	return nil
}

func (h *logRecords) warnings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var w []string
	for _, r := range h.recs {
		if strings.HasPrefix(r, "WARN") || strings.HasPrefix(r, "ERROR") {
			w = append(w, r)
		}
	}
	return w
}

// TestAutosnapshotCutByCloseIsNoWarning: a client that deletes its session
// right after the last call cuts that call's automatic snapshot short (the
// container is gone); the keeper logs no warning for it, and leaves no
// resume record. The same failure while the session stays open is a
// warning.
func TestAutosnapshotCutByCloseIsNoWarning(t *testing.T) {
	ctx := context.Background()
	cut := errors.New("sandbox: read from 53b412f8b8a6: use of closed network connection")
	for _, tc := range []struct {
		name     string
		close    bool
		wantWarn bool
	}{
		{"closed meanwhile", true, false},
		{"still open", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := state.NewMemory(nil)
			snaps := New(st, Config{MaxBytes: 1 << 20}, nil)
			res := NewResumes(st, snaps)
			eng := &cutEngine{entered: make(chan struct{}, 1), fail: make(chan error, 1)}
			logs := &logRecords{}
			k := NewKeeper(eng, snaps, NewCallLog(st), slog.New(logs))
			k.EnableResume(ResumeConfig{Resumes: res, AutoMaxBytes: 1 << 20})
			k.remember(ctx, "s1", core.Request{Op: core.OpSessionOpen, Owner: "alice"})
			if _, err := k.Handle(ctx, core.Request{Op: core.OpExec, Owner: "alice", SessionID: "s1", Code: "print(1)"}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-eng.entered: // the call's automatic snapshot is being taken
			case <-time.After(testscale.D(10 * time.Second)):
				t.Fatal("no automatic snapshot after the call")
			}
			closed := make(chan error, 1)
			if tc.close {
				go func() {
					_, err := k.Handle(ctx, core.Request{Op: core.OpSessionClose, Owner: "alice", SessionID: "s1"})
					closed <- err
				}()
				// The close forgets the session, then waits for the snapshot.
				deadline := time.Now().Add(testscale.D(10 * time.Second))
				for k.session("s1") != nil {
					if time.Now().After(deadline) {
						t.Fatal("the close did not forget the session")
					}
					time.Sleep(time.Millisecond)
				}
			}
			eng.fail <- cut
			if tc.close {
				if err := <-closed; err != nil {
					t.Fatal(err)
				}
			}
			k.WaitAutosnapshots()
			warns := logs.warnings()
			if tc.wantWarn != (len(warns) > 0) {
				t.Fatalf("warnings %q (want one: %v); every record: %q", warns, tc.wantWarn, logs.recs)
			}
			if _, err := res.Get(ctx, "alice", "s1"); core.CodeOf(err) != core.ErrNotFound {
				t.Fatalf("a failed snapshot left a resume record: %v", err)
			}
		})
	}
}
