package queue

import (
	"context"
	"sync"
	"time"
)

// A worker acknowledges (XACK) and deletes (XDEL) the stream entries of the
// jobs it finished in batches rather than one by one: the finish script
// takes the batch along when it is full, and a timer flushes the rest, so
// a call costs a fraction of those two commands instead of both. Until an
// entry is flushed it stays in the worker's pending list; if the worker
// dies first, the next worker that takes the entry over finds the job
// ended and only acknowledges it (takeoverScript), so nothing runs twice.

const (
	// ackBatchMax is the number of finished entries that makes a batch
	// due.
	ackBatchMax = 32
	// ackBatchBytes is the payload size of finished entries that makes a
	// batch due (large payloads leave Redis at once).
	ackBatchBytes = 1 << 20
	// ackFlushEvery is how often the timer flushes what is left.
	ackFlushEvery = 2 * time.Second
)

// ackBatch holds one worker's finished, unacknowledged entries by stream.
type ackBatch struct {
	mu  sync.Mutex
	per map[string]*ackList
}

// ackList is one stream's finished entries.
type ackList struct {
	ids   []string
	bytes int
}

// newAckBatch returns an empty batch.
func newAckBatch() *ackBatch { return &ackBatch{per: map[string]*ackList{}} }

// add records a finished entry of size payload bytes.
func (a *ackBatch) add(stream, id string, size int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.per[stream]
	if l == nil {
		l = &ackList{}
		a.per[stream] = l
	}
	l.ids = append(l.ids, id)
	l.bytes += size
}

// takeDue returns stream's batch plus id when adding id (size bytes) makes
// it due, emptying it; otherwise nil.
func (a *ackBatch) takeDue(stream, id string, size int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.per[stream]
	if l == nil {
		l = &ackList{}
	}
	if len(l.ids)+1 < ackBatchMax && l.bytes+size < ackBatchBytes {
		return nil
	}
	delete(a.per, stream)
	return append(l.ids, id)
}

// putBack returns ids that could not be flushed.
func (a *ackBatch) putBack(stream string, ids []string) {
	for _, id := range ids {
		a.add(stream, id, 0)
	}
}

// snapshot returns a copy of the batch, left in place.
func (a *ackBatch) snapshot() map[string][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string][]string, len(a.per))
	for s, l := range a.per {
		out[s] = append([]string(nil), l.ids...)
	}
	return out
}

// remove drops ids of stream (flushed) from the batch.
func (a *ackBatch) remove(stream string, ids []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.per[stream]
	if l == nil {
		return
	}
	gone := make(map[string]bool, len(ids))
	for _, id := range ids {
		gone[id] = true
	}
	kept := l.ids[:0]
	for _, id := range l.ids {
		if !gone[id] {
			kept = append(kept, id)
		}
	}
	l.ids = kept
	if len(kept) == 0 {
		delete(a.per, stream)
	}
}

// has reports whether id of stream waits in the batch.
func (a *ackBatch) has(stream, id string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if l := a.per[stream]; l != nil {
		for _, x := range l.ids {
			if x == id {
				return true
			}
		}
	}
	return false
}

// flushAcks acknowledges and deletes every entry in the batch (one XACK
// and one XDEL per stream, pipelined); entries that fail stay for the next
// flush.
func (w *redisWorker) flushAcks(ctx context.Context) {
	// Entries stay in the batch until flushed, so a look at this worker's
	// pending list (ownPending) never mistakes them for unstarted ones.
	all := w.acks.snapshot()
	if len(all) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, w.q.cfg.SubmitTimeout)
	defer cancel()
	pipe := w.q.rdb.Pipeline()
	for s, ids := range all {
		pipe.XAck(ctx, s, group, ids...)
		pipe.XDel(ctx, s, ids...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		w.log.Debug("acknowledging finished jobs failed; retrying later", "err", err)
		return
	}
	for s, ids := range all {
		w.acks.remove(s, ids)
	}
}

// ackLoop flushes the batch every ackFlushEvery until ctx ends.
func (w *redisWorker) ackLoop(ctx context.Context) {
	t := time.NewTicker(ackFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.flushAcks(ctx)
		}
	}
}
