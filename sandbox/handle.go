package sandbox

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/core"
)

// Handle runs any Request: it is the one entry a worker calls with a job
// it took from the queue. User-code outcomes and refusals are Results; Go
// errors are platform failures or core.ErrSessionNotFound.
func (e *Engine) Handle(ctx context.Context, req core.Request) (core.Result, error) {
	switch req.Op {
	case "", core.OpExec:
		if req.SessionID != "" {
			return e.SessionExec(ctx, req)
		}
		return e.Exec(ctx, req)
	case core.OpSessionOpen:
		info, rej, err := e.OpenSession(ctx, req)
		if err != nil || rej != nil {
			return deref(rej), err
		}
		return core.Result{Status: core.StatusOK, SessionID: info.ID}, nil
	case core.OpSessionClose:
		return core.Result{Status: core.StatusOK}, e.CloseSession(req.Owner, req.SessionID)
	case core.OpSessionInfo:
		info, err := e.Session(req.Owner, req.SessionID)
		if err != nil {
			return core.Result{}, err
		}
		return core.Result{Status: core.StatusOK, SessionID: info.ID, Session: &info}, nil
	case core.OpSessionInterrupt:
		ok, err := e.InterruptSession(ctx, req.Owner, req.SessionID)
		if err != nil {
			return core.Result{}, err
		}
		return core.Result{Status: core.StatusOK, Interrupted: ok}, nil
	case core.OpSessionRestart:
		if err := e.RestartSession(ctx, req.Owner, req.SessionID); err != nil {
			return core.Result{}, err
		}
		return core.Result{Status: core.StatusOK, KernelRestarted: true}, nil
	case core.OpSessionIntrospect:
		reply, err := e.IntrospectSession(ctx, req.Owner, req.SessionID, req.Code, req.Introspect)
		if err != nil {
			return core.Result{}, err
		}
		return core.Result{Status: core.StatusOK, Reply: reply}, nil
	case core.OpSessionInput:
		taken, err := e.InputSession(ctx, req.Owner, req.SessionID, req.Stdin)
		if err != nil {
			return core.Result{}, err
		}
		return core.Result{Status: core.StatusOK, InputTaken: taken}, nil
	case core.OpFilePut:
		size, err := e.PutFileAt(ctx, req.Owner, req.SessionID, req.Path, req.Offset, req.Data)
		if err != nil {
			return fileResult(err)
		}
		return core.Result{Status: core.StatusOK, Size: size}, nil
	case core.OpFileGet:
		data, size, err := e.GetFileAt(ctx, req.Owner, req.SessionID, req.Path, req.Offset, req.Length)
		if err != nil {
			return fileResult(err)
		}
		return core.Result{Status: core.StatusOK, Data: data, Size: size}, nil
	case core.OpFileList:
		entries, err := e.ListFiles(ctx, req.Owner, req.SessionID, req.Path)
		if err != nil {
			return fileResult(err)
		}
		return core.Result{Status: core.StatusOK, Entries: entries}, nil
	default:
		return core.Result{Status: core.StatusRejected, ExitCode: -1, Message: fmt.Sprintf("unknown operation %q", req.Op)}, nil
	}
}

// fileResult turns a refused file operation into a rejected Result and
// passes platform failures through.
func fileResult(err error) (core.Result, error) {
	if isRefusal(err) {
		return core.Result{Status: core.StatusRejected, ExitCode: -1, Message: err.Error()}, nil
	}
	return core.Result{}, err
}
