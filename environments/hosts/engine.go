package hosts

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
)

// Handler is a worker's engine (jobs.Engine, *sandbox.Engine).
type Handler interface {
	Handle(ctx context.Context, req core.Request) (core.Result, error)
}

// Engine runs requests on next after making sure this host holds the
// image of a custom environment they name: a one-shot call or a session
// being opened (a session's later calls run in its container). The
// request's image becomes this host's tag of it.
type Engine struct {
	next   Handler
	holder *Holder
}

// NewEngine returns next wrapped by holder.
func NewEngine(next Handler, holder *Holder) *Engine { return &Engine{next: next, holder: holder} }

// Handle ensures req's environment image here, then runs req on next.
// While a build runs, the caller gets core.EventBuilding events.
func (e *Engine) Handle(ctx context.Context, req core.Request) (core.Result, error) {
	if req.SessionID == "" && req.EnvironmentHash != "" && req.Image != "" && !environments.Builtin(req.Environment) &&
		(req.Op == "" || req.Op == core.OpExec || req.Op == core.OpSessionOpen) {
		var open atomic.Bool
		open.Store(true)
		emit := func(ev environments.Event) {
			if !open.Load() || (ev.Type != environments.EventStep && ev.Type != environments.EventProgress && ev.Type != environments.EventDone) {
				return
			}
			core.Emit(ctx, BuildingEvent(req.Environment, ev))
		}
		tag, _, err := e.holder.Ensure(ctx, req.Environment, req.EnvironmentHash, emit)
		open.Store(false)
		if err != nil {
			return core.Result{}, err
		}
		req.Image = tag
	}
	return e.next.Handle(ctx, req)
}

// BuildingEvent is the core.EventBuilding a caller sees for one build
// event of environment name.
func BuildingEvent(name string, ev environments.Event) core.Event {
	text := ev.Line
	if text == "" {
		text = "building environment " + name
	}
	return core.Event{Kind: core.EventBuilding, Text: text, Data: map[string]string{
		"environment": name, "step": ev.Step, "progress": strconv.FormatFloat(ev.Progress, 'f', 2, 64)}}
}
