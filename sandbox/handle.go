package sandbox

import (
	"context"
	"fmt"
)

// Handle runs any Request: it is the one entry a worker calls with a job
// it took from the queue. User-code outcomes and refusals are Results; Go
// errors are platform failures or ErrSessionNotFound.
func (e *Engine) Handle(ctx context.Context, req Request) (Result, error) {
	switch req.Op {
	case "", OpExec:
		if req.SessionID != "" {
			return e.SessionExec(ctx, req)
		}
		return e.Exec(ctx, req)
	case OpSessionOpen:
		info, rej, err := e.OpenSession(ctx, req)
		if err != nil || rej != nil {
			return deref(rej), err
		}
		return Result{Status: StatusOK, SessionID: info.ID}, nil
	case OpSessionClose:
		return Result{Status: StatusOK}, e.CloseSession(req.SessionID, req.Owner)
	case OpFilePut:
		if err := e.PutFile(ctx, req.SessionID, req.Owner, req.Path, req.Data); err != nil {
			return fileResult(err)
		}
		return Result{Status: StatusOK}, nil
	case OpFileGet:
		data, err := e.GetFile(ctx, req.SessionID, req.Owner, req.Path)
		if err != nil {
			return fileResult(err)
		}
		return Result{Status: StatusOK, Data: data}, nil
	default:
		return Result{Status: StatusRejected, ExitCode: -1, Message: fmt.Sprintf("unknown operation %q", req.Op)}, nil
	}
}

// fileResult turns a refused file operation into a rejected Result and
// passes platform failures through.
func fileResult(err error) (Result, error) {
	if isRefusal(err) {
		return Result{Status: StatusRejected, ExitCode: -1, Message: err.Error()}, nil
	}
	return Result{}, err
}
