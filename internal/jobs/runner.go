package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/queue"
)

// Engine is what a worker needs from the sandbox: the one entry for every
// operation. *sandbox.Engine satisfies it.
type Engine interface {
	Handle(ctx context.Context, req core.Request) (core.Result, error)
}

// runner runs queue jobs on a worker's sandbox engine. It binds a session
// to this worker when it opens one and unbinds it when the session ends.
type runner struct {
	engine Engine
}

// NewRunner returns the worker side of the queue: the queue.Handler that
// runs each job's sandbox request on engine.
func NewRunner(engine Engine) queue.Handler { return queue.HandlerFunc((&runner{engine: engine}).run) }

// run decodes the request, runs it and encodes the outcome. Refusals and
// engine errors travel in the reply; only a broken payload or a cancelled
// job is returned as an error.
func (h *runner) run(ctx context.Context, j queue.Job) (queue.Reply, error) {
	var req core.Request
	if err := json.Unmarshal(j.Payload, &req); err != nil {
		return queue.Reply{}, fmt.Errorf("jobs: decode job %s: %w", j.ID, err)
	}
	if req.JobID == "" {
		req.JobID = j.ID
	}
	res, err := h.engine.Handle(withQueueSink(ctx), req)
	if ctx.Err() != nil {
		if err == nil && req.Op == core.OpSessionOpen && res.SessionID != "" {
			// Nobody will learn this session's id: close it rather than
			// let it hold a quota slot until its idle timeout.
			_, _ = h.engine.Handle(context.WithoutCancel(ctx), core.Request{Op: core.OpSessionClose, SessionID: res.SessionID, Owner: req.Owner})
		}
		return queue.Reply{}, fmt.Errorf("jobs: job %s: %w", j.ID, context.Cause(ctx))
	}
	var rep queue.Reply
	env := envelope{}
	if err != nil {
		env.Error = toWire(err)
		if errors.Is(err, core.ErrNotFound) && req.SessionID != "" {
			rep.UnbindSession = req.SessionID
		}
	} else {
		env.Result = &res
		switch {
		case req.Op == core.OpSessionOpen && res.SessionID != "":
			rep.BindSession = res.SessionID
		case req.Op == core.OpSessionClose, res.SessionEnded:
			rep.UnbindSession = req.SessionID
		}
	}
	payload, merr := json.Marshal(env)
	if merr != nil {
		return queue.Reply{}, fmt.Errorf("jobs: encode reply of %s: %w", j.ID, merr)
	}
	rep.Payload = payload
	return rep, nil
}
