package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// batchPollEvery is how long a worker whose slots interactive jobs do not
// fill waits before looking at the batch lane again after finding it empty
// idle times in a row: 20 ms doubling up to ReadBlock, so an idle worker
// costs Redis a few commands per ReadBlock while a batch job reaching it
// starts within ReadBlock at worst. While batch jobs keep coming it looks
// every time.
func batchPollEvery(readBlock time.Duration, idle int) time.Duration {
	return min(20*time.Millisecond<<min(idle, 10), max(readBlock, 20*time.Millisecond))
}

// fetch returns up to n deliveries from the lanes (reclaimed ones first,
// every VisibilityTimeout/2; then interactive; then batch for the slots
// interactive jobs left free, at most room of them) and any number from
// the own stream; lane deliveries come first in the slice. room is how
// many more batch jobs may run here (Concurrency minus the running ones).
//
// Lanes are read with separate XREADGROUP calls, each with COUNT of the
// slots still free, so a worker never holds an entry it cannot start (a
// multi-stream read returns up to COUNT entries per stream). It blocks
// only on the interactive lane and its own stream, for at most the time
// until the next batch-lane look; while room is 0 for up to ReadBlock,
// and the first batch job to end meanwhile ends the read with a wake
// entry on the own stream (wakeForRoom).
func (w *redisWorker) fetch(ctx context.Context, n, room int, nextClaim *time.Time) ([]delivery, error) {
	if time.Now().After(*nextClaim) {
		*nextClaim = time.Now().Add(w.q.cfg.VisibilityTimeout / 2)
		w.claimLanes = [2]bool{true, true}
	}
	for i, s := range w.lanes {
		k := n
		if i == 1 {
			k = min(n, room) // with no batch room, claim when a batch job ends
		}
		if !w.claimLanes[i] || k <= 0 {
			continue
		}
		w.claimLanes[i] = false
		ds, err := w.reclaim(ctx, s, k)
		if err != nil || len(ds) > 0 {
			return ds, err
		}
	}
	inter, batch := w.lanes[0], w.lanes[1]
	due := func() bool { return w.batchFlowing || !time.Now().Before(w.nextBatchPoll) }
	if room <= 0 {
		// Flag first, then look again: a batch job that ends after this
		// look sees the flag and wakes the read below.
		w.roomWait.Store(true)
		defer w.roomWait.Store(false)
		room = w.batchRoom()
	}
	block := time.Duration(-1) // no BLOCK argument: return at once
	switch {
	case room <= 0: // never return at once: that would spin
		block = max(w.cfg.ReadBlock, time.Millisecond)
	case !due():
		block = min(w.cfg.ReadBlock, time.Until(w.nextBatchPoll))
		if block < time.Millisecond { // BLOCK 0 would wait forever
			block = -1
		}
	}
	ds, own, err := w.read(ctx, []string{inter, w.ownStream}, n, block)
	if err != nil {
		return nil, err
	}
	// COUNT is never 0 here: XREADGROUP COUNT 0 means no limit.
	if k := min(n-len(ds), room); k > 0 && due() {
		bs, _, err := w.read(ctx, []string{batch}, k, -1)
		if err != nil {
			return nil, err
		}
		w.batchFlowing = len(bs) > 0
		if w.batchFlowing {
			w.batchIdle = 0
		} else {
			w.batchIdle++
		}
		w.nextBatchPoll = time.Now().Add(batchPollEvery(w.cfg.ReadBlock, w.batchIdle))
		ds = append(ds, bs...)
	}
	return append(ds, own...), nil
}

// read runs one XREADGROUP ">" over streams; entries of the own stream are
// returned apart.
func (w *redisWorker) read(ctx context.Context, streams []string, n int, block time.Duration) (lane, own []delivery, err error) {
	args := append(append([]string(nil), streams...), make([]string, len(streams))...)
	for i := range streams {
		args[len(streams)+i] = ">"
	}
	res, err := w.q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: group, Consumer: w.cfg.ID, Count: int64(n), Block: block, Streams: args,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, w.groupErr(ctx, err)
	}
	for _, s := range res {
		for _, m := range s.Messages {
			if s.Stream == w.ownStream {
				if _, ok := m.Values[wakeField]; ok {
					w.acks.add(s.Stream, m.ID, 0)
					continue
				}
				own = append(own, delivery{stream: s.Stream, msg: m})
			} else {
				lane = append(lane, delivery{stream: s.Stream, msg: m})
			}
		}
	}
	return lane, own, nil
}

// reclaim takes over up to n entries of stream idle past the visibility
// timeout (their worker died or stalled), sweeping the pending list from
// the last cursor.
func (w *redisWorker) reclaim(ctx context.Context, stream string, n int) ([]delivery, error) {
	for range 10 {
		msgs, next, err := w.q.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: stream, Group: group, Consumer: w.cfg.ID,
			MinIdle: w.q.cfg.VisibilityTimeout, Start: cmpOr(w.cursors[stream], "0-0"), Count: int64(n),
		}).Result()
		if err != nil {
			return nil, w.groupErr(ctx, err)
		}
		w.cursors[stream] = next
		if len(msgs) > 0 {
			ds := make([]delivery, len(msgs))
			for i, m := range msgs {
				ds[i] = delivery{stream: stream, msg: m, recovered: true}
			}
			w.log.Info("reclaimed stalled jobs", "count", len(msgs), "stream", stream)
			return ds, nil
		}
		if next == "0-0" {
			break
		}
	}
	return nil, nil
}

// ownPending returns up to n lane entries (of which at most room batch
// ones) delivered to this worker but neither handed to a goroutine nor
// finished here (their read's reply was lost). It lists them with
// XPENDING and reads them with XRANGE, neither of which counts a
// delivery, so the attempt stays right. Entries left out stay pending and
// are reclaimed after the visibility timeout.
func (w *redisWorker) ownPending(ctx context.Context, n, room int) ([]delivery, error) {
	var ds []delivery
	for i, s := range w.lanes {
		if i == 1 {
			n = min(n, len(ds)+max(room, 0))
		}
		pend, err := w.q.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: s, Group: group, Start: "-", End: "+", Count: 1000, Consumer: w.cfg.ID,
		}).Result()
		if err != nil {
			return nil, w.groupErr(ctx, err)
		}
		for _, p := range pend {
			w.mu.Lock()
			busy := w.handed[s+" "+p.ID]
			w.mu.Unlock()
			if len(ds) >= n || busy || w.acks.has(s, p.ID) {
				continue
			}
			msgs, err := w.q.rdb.XRangeN(ctx, s, p.ID, p.ID, 1).Result()
			if err != nil {
				return nil, err
			}
			if len(msgs) == 1 {
				ds = append(ds, delivery{stream: s, msg: msgs[0], recovered: true})
			}
		}
	}
	return ds, nil
}

// groupErr recreates the consumer groups when Redis lost them (restarted
// without persistence) and passes err on.
func (w *redisWorker) groupErr(ctx context.Context, err error) error {
	if strings.Contains(err.Error(), "NOGROUP") {
		_ = w.createGroups(ctx)
	}
	return err
}

// cmpOr returns a, or b when a is empty.
func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// parseJob decodes a stream message of lane into a Job.
func parseJob(m redis.XMessage, lane Lane) (Job, error) {
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	j := Job{ID: s("id"), Owner: s("owner"), Session: s("sess"), Lane: lane, Payload: []byte(s("pl")), replyTo: s("reply")}
	dl, err1 := strconv.ParseInt(s("dl"), 10, 64)
	enq, err2 := strconv.ParseInt(s("enq"), 10, 64)
	if j.ID == "" || err1 != nil || err2 != nil {
		return j, fmt.Errorf("queue: malformed stream entry %s", m.ID)
	}
	j.Deadline, j.EnqueuedAt = time.UnixMilli(dl), time.UnixMicro(enq)
	return j, nil
}
