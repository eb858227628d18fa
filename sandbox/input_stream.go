package sandbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// inputChunk is the tar bytes one stage request carries (base64 in its
// line: about 1.4 MiB). Airlock holds one chunk at a time, the controller
// a few (airlock_stream.py QUEUED_CHUNKS).
const inputChunk = 1 << 20

// stager sends a tar, as it is written, to a box's controller in stage
// requests of inputChunk bytes, each answered before the next is sent.
type stager struct {
	ctx    context.Context
	e      *Engine
	b      *box
	bounds archiveBounds
	size   int64 // the announced bound of the tar's size
	buf    []byte
	sent   int64
	err    error // sticky: the first failure to send (not the packer's)
}

// Write buffers p, sending every full chunk.
func (s *stager) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), inputChunk-len(s.buf))
		s.buf = append(s.buf, p[:k]...)
		p = p[k:]
		if len(s.buf) == inputChunk {
			if err := s.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

// flush sends the buffered bytes as one stage request.
func (s *stager) flush() error {
	if len(s.buf) == 0 || s.err != nil {
		return s.err
	}
	if s.sent+int64(len(s.buf)) > s.size {
		s.err = core.Errorf("sandbox.input", core.ErrInternal, fmt.Sprintf("the input folder's tar grew past the %d bytes its scan allowed", s.size))
		return s.err
	}
	req := ctlRequest{Op: "stage", Offset: s.sent, Data: s.buf}
	if s.sent == 0 {
		req.ArchiveSize, req.ArchiveMaxEntries, req.ArchiveMaxBytes, req.ArchiveMaxRatio = s.size, s.bounds.entries, s.bounds.bytes, s.bounds.ratio
	}
	// A stage waits while the controller's unpacker catches up (a few
	// chunks queued): the bound is unpackTime of a chunk dense with entries.
	wait := unpackTime(len(s.buf), len(s.buf)/512)
	out, err := s.b.call(s.ctx, s.e, req, callOpts{deadline: time.Now().Add(wait)})
	switch {
	case err != nil:
		s.err = fmt.Errorf("sandbox: copy the input folder into %s: %w", short(s.b.id), err)
	case out.abandoned:
		s.err = fmt.Errorf("sandbox: copy the input folder abandoned: %w", context.Cause(s.ctx))
	case !out.gotDone:
		s.err = core.Errorf("sandbox.input", core.ErrUnavailable, "the sandbox stopped answering while the input folder was copied into it")
	case out.done.Fail != "":
		s.err = core.Errorf("sandbox.input", knownCode(out.done.Code), "the input folder could not be copied into the sandbox: "+out.done.Fail)
	}
	if s.err != nil {
		return s.err
	}
	s.sent += int64(len(s.buf))
	s.buf = s.buf[:0]
	return nil
}

// streamInput copies c's scanned input folder into b's /workspace as a
// tar streamed in stage requests, and sets req to name it (ArchiveStream)
// so the controller checks it arrived whole before the call runs. A folder
// that changed since its scan is a rejected result; a failure to send is an
// error. Either way the controller drops what it staged (an abort now, or
// at the next exec at the latest).
func (e *Engine) streamInput(ctx context.Context, b *box, c checked, req *ctlRequest) (*core.Result, error) {
	s := &stager{ctx: ctx, e: e, b: b, bounds: e.unpackBounds(c), size: c.input.packed, buf: make([]byte, 0, inputChunk)}
	err := c.input.packTo(s)
	if err == nil {
		err = s.flush()
	}
	if s.err != nil {
		err = s.err // the packer saw the sender's failure as its own
	}
	if err == nil {
		req.ArchiveStream = s.sent
		return nil, nil
	}
	if s.sent > 0 && !b.dead.Load() {
		_, _ = b.call(context.WithoutCancel(ctx), e, ctlRequest{Op: "stage", Abort: true}, callOpts{deadline: time.Now().Add(unpackTime(0, 0))})
	}
	var refused *core.Error
	if s.err == nil && errors.As(err, &refused) {
		return &core.Result{Status: core.StatusRejected, ExitCode: -1, Message: refused.Message()}, nil
	}
	return nil, err
}
