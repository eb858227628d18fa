package jobs

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/airlock-dev/airlock/core"
)

// InterruptSession raises KeyboardInterrupt in the call running in session
// id, if any; it reports whether there was one. It travels as its own job
// to the worker holding the session, so it runs beside the call (the worker
// needs a free slot: Concurrency of at least 2).
func (c *Client) InterruptSession(ctx context.Context, owner, id string) (bool, error) {
	res, err := c.Exec(ctx, core.Request{Op: core.OpSessionInterrupt, Owner: owner, SessionID: id})
	if err != nil {
		return false, err
	}
	if err := rejected(res); err != nil {
		return false, err
	}
	return res.Interrupted, nil
}

// RestartSession replaces session id's Python process: its files are kept,
// its Python state is dropped.
func (c *Client) RestartSession(ctx context.Context, owner, id string) error {
	res, err := c.Exec(ctx, core.Request{Op: core.OpSessionRestart, Owner: owner, SessionID: id})
	if err != nil {
		return err
	}
	return rejected(res)
}

// SessionInfo describes session id: state, execution count, resource use.
func (c *Client) SessionInfo(ctx context.Context, owner, id string) (core.SessionInfo, error) {
	res, err := c.Exec(ctx, core.Request{Op: core.OpSessionInfo, Owner: owner, SessionID: id})
	if err != nil {
		return core.SessionInfo{}, err
	}
	if err := rejected(res); err != nil {
		return core.SessionInfo{}, err
	}
	if res.Session == nil {
		return core.SessionInfo{}, core.E("jobs", core.ErrInternal, errors.New("session.info reply without a session"))
	}
	return *res.Session, nil
}

// ListFiles lists the folder path ("" for /work) of session id.
func (c *Client) ListFiles(ctx context.Context, owner, id, path string) ([]core.FileEntry, error) {
	res, err := c.Exec(ctx, core.Request{Op: core.OpFileList, Owner: owner, SessionID: id, Path: path})
	if err != nil {
		return nil, err
	}
	if err := rejected(res); err != nil {
		return nil, err
	}
	return res.Entries, nil
}

// IntrospectSession asks session id's Python process about code (a
// completion, an inspection or an is-complete check, q.Kind) and returns
// the kernel's answer: the content of Jupyter's matching reply.
func (c *Client) IntrospectSession(ctx context.Context, owner, id, code string, q core.Introspect) (json.RawMessage, error) {
	res, err := c.Exec(ctx, core.Request{Op: core.OpSessionIntrospect, Owner: owner, SessionID: id, Code: code, Introspect: &q})
	if err != nil {
		return nil, err
	}
	if err := rejected(res); err != nil {
		return nil, err
	}
	return res.Reply, nil
}

// InputSession answers the input() session id's running call waits in
// (after a core.EventInput) with value; it reports whether a call was
// waiting. Like an interrupt it runs beside the call on the worker holding
// the session.
func (c *Client) InputSession(ctx context.Context, owner, id, value string) (bool, error) {
	res, err := c.Exec(ctx, core.Request{Op: core.OpSessionInput, Owner: owner, SessionID: id, Stdin: value})
	if err != nil {
		return false, err
	}
	if err := rejected(res); err != nil {
		return false, err
	}
	return res.InputTaken, nil
}
