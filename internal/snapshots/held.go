package snapshots

import "context"

// heldBytes bounds the snapshot an automatic save holds in memory while
// the session's next call runs (save): past it the parts are streamed into
// the store while the session waits, as before.
const heldBytes = 4 << 20

// heldParts collects a snapshot's parts in memory up to max bytes, then
// spills them (and every later chunk) into w.
type heldParts struct {
	w       *Writer
	max     int
	n       int
	parts   []heldChunk
	spilled bool
}

// heldChunk is one chunk of part.
type heldChunk struct {
	part string
	data []byte
}

// write takes one chunk of part (chunk is the caller's no more).
func (h *heldParts) write(ctx context.Context, part string, chunk []byte) error {
	if !h.spilled && h.n+len(chunk) <= h.max {
		h.n += len(chunk)
		h.parts = append(h.parts, heldChunk{part: part, data: chunk})
		return nil
	}
	if err := h.spill(ctx); err != nil {
		return err
	}
	return h.w.Write(ctx, part, chunk)
}

// spill writes what is held into w; from then on write goes to w.
func (h *heldParts) spill(ctx context.Context) error {
	h.spilled = true
	for len(h.parts) > 0 {
		c := h.parts[0]
		h.parts = h.parts[1:]
		if err := h.w.Write(ctx, c.part, c.data); err != nil {
			return err
		}
	}
	h.n = 0
	return nil
}
