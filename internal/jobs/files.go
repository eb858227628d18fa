package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// DefaultChunkBytes is the default size of one file chunk.
const DefaultChunkBytes = 1 << 20

// truncateTimeout bounds the clean-up of a partial upload.
const truncateTimeout = 10 * time.Second

// PutFile streams body into path in a session's work folder, one
// OpFilePut job per chunk of ClientConfig.ChunkBytes (Offset 0 creates or
// truncates, then each chunk appends), so a transfer holds one chunk, not
// the file. It returns the bytes written. When reading body fails (for
// example past an http.MaxBytesReader cap) the partial file is truncated to
// empty and the read error is returned.
func (c *Client) PutFile(ctx context.Context, owner, id, path string, body io.Reader) (int64, error) {
	buf := make([]byte, c.cfg.ChunkBytes)
	var off int64
	for {
		n, rerr := io.ReadFull(body, buf)
		last := errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF)
		if rerr != nil && !last {
			c.truncate(ctx, owner, id, path, off)
			return off, rerr
		}
		if n == 0 && off > 0 {
			return off, nil
		}
		if err := c.putChunk(ctx, owner, id, path, off, buf[:n]); err != nil {
			c.truncate(ctx, owner, id, path, off)
			return off, err
		}
		off += int64(n)
		if last {
			return off, nil
		}
	}
}

// putChunk writes data at off.
func (c *Client) putChunk(ctx context.Context, owner, id, path string, off int64, data []byte) error {
	res, err := c.Exec(ctx, core.Request{Op: core.OpFilePut, Owner: owner, SessionID: id, Path: path, Offset: off, Data: data})
	if err != nil {
		return err
	}
	return rejected(res)
}

// truncate empties a partially written file (best effort: the upload has
// already failed). Nothing was written when written is 0.
func (c *Client) truncate(ctx context.Context, owner, id, path string, written int64) {
	if written == 0 {
		return
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), truncateTimeout)
	defer cancel()
	_, _ = c.Exec(tctx, core.Request{Op: core.OpFilePut, Owner: owner, SessionID: id, Path: path})
}

// GetFile streams path from a session's work folder, one OpFileGet job per
// chunk (Offset, Length). open is called once, with the file's total size,
// before the first byte is written; a failure before then leaves open
// uncalled, so the caller can still answer with an error. It returns the
// bytes written.
func (c *Client) GetFile(ctx context.Context, owner, id, path string, open func(size int64) io.Writer) (int64, error) {
	chunk := int64(c.cfg.ChunkBytes)
	data, size, err := c.getChunk(ctx, owner, id, path, 0, chunk)
	if err != nil {
		return 0, err
	}
	if size < int64(len(data)) {
		return 0, fmt.Errorf("jobs: %s: the worker sent %d bytes of a %d-byte file: %w", path, len(data), size, core.ErrInternal)
	}
	w := open(size)
	var off int64
	for {
		if len(data) > 0 {
			if _, err := w.Write(data); err != nil {
				return off, fmt.Errorf("jobs: write file: %w", err)
			}
			off += int64(len(data))
		}
		if off >= size {
			return off, nil
		}
		if data, _, err = c.getChunk(ctx, owner, id, path, off, min(chunk, size-off)); err != nil {
			return off, err
		}
		if len(data) == 0 {
			return off, fmt.Errorf("jobs: %s shrank to %d bytes while being read (%d expected): %w", path, off, size, core.ErrConflict)
		}
	}
}

// getChunk reads up to n bytes at off; it returns them and the file's size.
func (c *Client) getChunk(ctx context.Context, owner, id, path string, off, n int64) ([]byte, int64, error) {
	res, err := c.Exec(ctx, core.Request{Op: core.OpFileGet, Owner: owner, SessionID: id, Path: path, Offset: off, Length: n})
	if err != nil {
		return nil, 0, err
	}
	if err := rejected(res); err != nil {
		return nil, 0, err
	}
	return res.Data, res.Size, nil
}
