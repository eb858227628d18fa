package sandbox

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// PutFile writes data as the whole content of path (relative to /work) in
// a session. Larger files go in chunks through PutFileAt.
func (e *Engine) PutFile(ctx context.Context, owner, id, path string, data []byte) error {
	_, err := e.PutFileAt(ctx, owner, id, path, 0, data)
	return err
}

// PutFileAt writes one chunk of a file: offset 0 creates or truncates it,
// a larger offset appends at exactly that offset (the file must be that
// long: no gap). It returns the file's size after the write. A chunk is at
// most MaxFileBytes.
func (e *Engine) PutFileAt(ctx context.Context, owner, id, path string, offset int64, data []byte) (int64, error) {
	if len(data) > e.cfg.MaxFileBytes {
		return 0, fmt.Errorf("sandbox: chunk is %d bytes, over the %d-byte limit: %w", len(data), e.cfg.MaxFileBytes, core.ErrTooLarge)
	}
	if offset < 0 {
		return 0, fmt.Errorf("sandbox: offset %d is negative: %w", offset, core.ErrInvalid)
	}
	if err := checkWorkPath(path); err != nil {
		return 0, err
	}
	f, err := e.fileOp(ctx, owner, id, ctlRequest{Op: "put", Path: path, Data: data, Offset: offset})
	return f.Size, err
}

// GetFile reads the whole of path (relative to /work) from a session,
// never following a symlink; a file over MaxFileBytes is refused (read it
// in chunks with GetFileAt).
func (e *Engine) GetFile(ctx context.Context, owner, id, path string) ([]byte, error) {
	data, size, err := e.GetFileAt(ctx, owner, id, path, 0, int64(e.cfg.MaxFileBytes))
	if err == nil && size > int64(len(data)) {
		return nil, fmt.Errorf("sandbox: %s is %d bytes, over the %d-byte limit: %w", path, size, e.cfg.MaxFileBytes, core.ErrTooLarge)
	}
	return data, err
}

// GetFileAt reads at most length bytes of path from offset (length 0 or
// past MaxFileBytes means MaxFileBytes) and returns them with the file's
// whole size.
func (e *Engine) GetFileAt(ctx context.Context, owner, id, path string, offset, length int64) ([]byte, int64, error) {
	if err := checkWorkPath(path); err != nil {
		return nil, 0, err
	}
	if offset < 0 || length < 0 {
		return nil, 0, fmt.Errorf("sandbox: offset and length must not be negative: %w", core.ErrInvalid)
	}
	if length == 0 || length > int64(e.cfg.MaxFileBytes) {
		length = int64(e.cfg.MaxFileBytes)
	}
	f, err := e.fileOp(ctx, owner, id, ctlRequest{Op: "get", Path: path, Offset: offset, Length: length, MaxBytes: length})
	if err != nil {
		return nil, 0, err
	}
	data, err := f.bytesData()
	if err != nil || int64(len(data)) > length {
		return nil, 0, fmt.Errorf("sandbox: get %s: bad chunk from the controller: %w", path, core.ErrInternal)
	}
	return data, f.Size, nil
}

// ListFiles lists the folder path ("" for /work) of a session.
func (e *Engine) ListFiles(ctx context.Context, owner, id, path string) ([]core.FileEntry, error) {
	if path != "" && path != "." {
		if err := checkWorkPath(path); err != nil {
			return nil, err
		}
	} else {
		path = ""
	}
	f, err := e.fileOp(ctx, owner, id, ctlRequest{Op: "ls", Path: path})
	return f.Entries, err
}

// fileOp runs one file request in a session's container.
func (e *Engine) fileOp(ctx context.Context, owner, id string, req ctlRequest) (ctlFrame, error) {
	ss, err := e.sessions.get(owner, id)
	if err != nil {
		return ctlFrame{}, err
	}
	e.sessions.touch(ss)
	out, err := ss.box.call(ctx, e, req, callOpts{deadline: time.Now().Add(30 * time.Second), session: true})
	if err != nil {
		return ctlFrame{}, err
	}
	if out.abandoned {
		return ctlFrame{}, fmt.Errorf("sandbox: %s %s abandoned: %w", req.Op, req.Path, context.Cause(ctx))
	}
	if ss.box.dead.Load() || !out.gotDone {
		e.sessions.end(ss)
		return ctlFrame{}, fmt.Errorf("sandbox: session %s ended during a file operation: %w", id, core.ErrSessionNotFound)
	}
	if out.done.Fail != "" {
		return ctlFrame{}, fmt.Errorf("sandbox: %s %s: %w: %s", req.Op, req.Path, core.ErrInvalid, out.done.Fail)
	}
	return out.done, nil
}
