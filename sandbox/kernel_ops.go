package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
)

// introspectTimeout bounds one introspection once it has the session's
// container; past it the container is killed. The controller's own bound
// is 15 s in the kernel (the first completion imports Jedi: a kernel that
// has not answered by then is interrupted, and replaced 2 s later if it
// still has not; the session goes on); the rest is room for adopting a
// kernel and the cleanup after the question.
const introspectTimeout = 30 * time.Second

// maxInputBytes bounds one answer to input().
const maxInputBytes = 1 << 20

// IntrospectSession asks the session's Python process about code: the
// completions or the help at q.CursorPos, or whether code is complete. It
// waits for a running call to end first (like Jupyter's shell channel). The
// answer is the content of Jupyter's complete_reply, inspect_reply or
// is_complete_reply, as the kernel (not trusted beyond that) wrote it.
func (e *Engine) IntrospectSession(ctx context.Context, owner, id, code string, q *core.Introspect) (json.RawMessage, error) {
	if q == nil {
		return nil, core.Errorf("sandbox.introspect", core.ErrInvalid, "an introspect request needs its question (introspect)")
	}
	switch q.Kind {
	case core.IntrospectComplete, core.IntrospectInspect, core.IntrospectIsComplete, core.IntrospectVariables:
	default:
		return nil, core.Errorf("sandbox.introspect", core.ErrInvalid, fmt.Sprintf("introspect kind %q is not one of complete, inspect, is_complete, variables", q.Kind))
	}
	if len(code) > e.cfg.MaxCodeBytes || !utf8.ValidString(code) {
		return nil, core.Errorf("sandbox.introspect", core.ErrInvalid, fmt.Sprintf("code must be valid UTF-8 of at most %d bytes", e.cfg.MaxCodeBytes))
	}
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return nil, err
	}
	req := ctlRequest{Op: "introspect", What: q.Kind, Code: code, CursorPos: q.CursorPos, DetailLevel: q.DetailLevel}
	out, err := ss.box.call(ctx, e, req, callOpts{timeout: introspectTimeout, session: true, quiet: true})
	if err != nil {
		return nil, err
	}
	switch {
	case out.died || out.timedOut || out.broken != "":
		e.sessions.end(ss)
		return nil, fmt.Errorf("sandbox: introspect in session %s: the container stopped answering: %w", id, core.ErrSessionNotFound)
	case out.abandoned:
		return nil, fmt.Errorf("sandbox: introspect abandoned: %w", context.Cause(ctx))
	case out.done.Fail != "":
		return nil, core.Errorf("sandbox.introspect", core.ErrInvalid, out.done.Fail)
	case len(out.done.Reply) == 0 || out.done.Reply[0] != '{':
		return nil, core.Errorf("sandbox.introspect", core.ErrInternal, "the kernel gave no answer")
	}
	return out.done.Reply, nil
}

// InputSession answers the input() the session's running call waits in
// with value (a line without its newline). It reports whether a call was
// waiting for it.
func (e *Engine) InputSession(ctx context.Context, owner, id, value string) (bool, error) {
	if len(value) > maxInputBytes || !utf8.ValidString(value) {
		return false, core.Errorf("sandbox.input", core.ErrInvalid, fmt.Sprintf("the input must be valid UTF-8 of at most %d bytes", maxInputBytes))
	}
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return false, err
	}
	if !ss.box.busy.Load() {
		return false, nil
	}
	f, err := ss.box.sideAck(ctlRequest{Op: "input_reply", Value: value}, 2*time.Second)
	if err != nil {
		return false, fmt.Errorf("sandbox: input to session %s: %w: %w", id, core.ErrUnavailable, err)
	}
	e.sessions.touch(ss)
	return f.Taken, nil
}
