package queue

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// heartbeatLoop refreshes liveness and running jobs' leases.
func (w *redisWorker) heartbeatLoop(ctx context.Context) {
	every := min(w.q.cfg.VisibilityTimeout, w.q.cfg.LivenessTTL) / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.beat(ctx)
		}
	}
}

// beat renews every running job's lease, then refreshes the liveness key
// and session bindings and sweeps old members of the active set. The two
// are independent: leases first, in their own pipeline, so a liveness
// write that fails never lets a running job's lease lapse and the job run
// twice. Neither uses a command a full Redis (maxmemory, noeviction)
// refuses: the liveness key is extended with PEXPIRE and SET only when it
// is missing (the first beat, or after a stall longer than LivenessTTL).
func (w *redisWorker) beat(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, w.q.cfg.SubmitTimeout)
	defer cancel()
	w.mu.Lock()
	tasks := make([]*task, 0, len(w.tasks))
	for _, t := range w.tasks {
		tasks = append(tasks, t)
	}
	sessions := make([]string, 0, len(w.sessions))
	for s := range w.sessions {
		sessions = append(sessions, s)
	}
	w.mu.Unlock()
	if len(tasks) > 0 {
		w.renewLeases(ctx, tasks)
	}
	w.refreshLiveness(ctx, sessions)
}

// renewLeases runs the lease heartbeat of every task in one pipeline and
// cancels the tasks whose job ended or went to another worker.
func (w *redisWorker) renewLeases(ctx context.Context, tasks []*task) {
	q := w.q
	pipe := q.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(tasks))
	keys := func(t *task) []string { return []string{t.stream, q.keys.active()} }
	for i, t := range tasks {
		cmds[i] = heartbeatScript.EvalSha(ctx, pipe, keys(t), group, w.cfg.ID, t.msgID, t.token, t.job.ID)
	}
	_, _ = pipe.Exec(ctx)
	for i, t := range tasks {
		r, err := cmds[i].Int()
		if err != nil && strings.Contains(err.Error(), "NOSCRIPT") {
			r, err = heartbeatScript.Run(ctx, q.rdb, keys(t), group, w.cfg.ID, t.msgID, t.token, t.job.ID).Int()
		}
		switch {
		case err != nil:
			w.log.Warn("lease heartbeat failed", "job", t.job.ID, "err", err)
		case r == -1:
			w.log.Warn("lease lost to another worker; cancelling", "job", t.job.ID)
			t.cancel(errLeaseLost)
		case r == 0:
			t.cancel(errJobOver)
		}
	}
}

// refreshLiveness extends the worker's liveness key, its own stream and
// its sessions' bindings, and sweeps the active set: every command of it
// a full Redis still runs. Only a missing liveness key is SET.
func (w *redisWorker) refreshLiveness(ctx context.Context, sessions []string) {
	q := w.q
	now := time.Now().UnixMilli()
	old := now - q.cfg.ResultTTL.Milliseconds()
	pipe := q.rdb.Pipeline()
	alive := pipe.PExpire(ctx, q.keys.alive(w.cfg.ID), q.cfg.LivenessTTL)
	pipe.PExpire(ctx, w.ownStream, workerStreamTTL)
	for _, s := range sessions {
		pipe.PExpire(ctx, q.keys.session(s), q.cfg.SessionTTL)
	}
	// Ended jobs and jobs whose callers died stay in the active set (the
	// one-outcome CAS and dedupe) until ResultTTL past their deadline.
	pipe.ZRemRangeByScore(ctx, q.keys.active(), "-inf", "("+itoa(terminalScore(old)))
	pipe.ZRemRangeByScore(ctx, q.keys.active(), "0", "("+itoa(old))
	w.advertiseEnvironments(ctx, pipe)
	_, err := pipe.Exec(ctx)
	if alive.Err() == nil && !alive.Val() {
		err = errors.Join(err, q.rdb.Set(ctx, q.keys.alive(w.cfg.ID), "1", q.cfg.LivenessTTL).Err())
	}
	if err != nil {
		w.log.Warn("liveness heartbeat failed", "err", err)
	}
}

// cancelLoop cancels running handlers whose jobs were ended by a caller.
func (w *redisWorker) cancelLoop(ctx context.Context, ps *redis.PubSub) {
	var bo backoff
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			sleepOr(bo.next(), ctx.Done())
			continue
		}
		bo.reset()
		m, ok := msg.(*redis.Message)
		if !ok {
			continue
		}
		id, _, ok := parseDone(m.Payload)
		if !ok {
			continue
		}
		w.mu.Lock()
		t := w.tasks[id]
		w.mu.Unlock()
		if t != nil {
			w.log.Info("job cancelled by its caller", "job", id)
			t.cancel(errJobOver)
		}
	}
}

// cleanup removes this worker's traces at exit: its liveness key, its own
// stream, and its consumer entry in each lane's group unless jobs are still
// pending under it (left running at the end of the grace period; deleting
// the consumer would drop them from the pending list and so from reclaim).
func (w *redisWorker) cleanup() {
	q, rdb := w.q, w.q.rdb
	ctx, cancel := context.WithTimeout(context.Background(), 2*q.cfg.SubmitTimeout)
	defer cancel()
	_ = rdb.Del(ctx, q.keys.alive(w.cfg.ID), w.ownStream).Err()
	w.unadvertise(ctx)
	for _, s := range w.lanes {
		pend, err := rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
			Stream: s, Group: group, Start: "-", End: "+", Count: 1, Consumer: w.cfg.ID,
		}).Result()
		if err == nil && len(pend) == 0 {
			_ = rdb.XGroupDelConsumer(ctx, s, group, w.cfg.ID).Err()
		}
	}
}

// unbindAll removes this worker's session bindings.
func (w *redisWorker) unbindAll() {
	w.mu.Lock()
	sessions := make([]string, 0, len(w.sessions))
	for s := range w.sessions {
		sessions = append(sessions, s)
	}
	w.sessions = map[string]struct{}{}
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), w.q.cfg.SubmitTimeout)
	defer cancel()
	for _, s := range sessions {
		_ = unbindScript.Run(ctx, w.q.rdb, []string{w.q.keys.session(s)}, w.cfg.ID).Err()
	}
}

// drainOwn answers every job left in this worker's own stream (read or
// not) with ErrSessionLost: its session dies with the worker.
func (w *redisWorker) drainOwn() {
	q := w.q
	ctx, cancel := context.WithTimeout(context.Background(), 2*q.cfg.SubmitTimeout)
	defer cancel()
	for _, id := range []string{"0", ">"} {
		res, err := q.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: group, Consumer: w.cfg.ID, Count: 1000, Block: -1,
			Streams: []string{w.ownStream, id},
		}).Result()
		if err != nil {
			continue
		}
		for _, s := range res {
			for _, m := range s.Messages {
				j, err := parseJob(m, LaneInteractive)
				if err != nil {
					continue
				}
				if j.Session == "" { // sent here for an environment this worker held: to the lane
					if _, _, err := q.moveEnvJob(j, w.cfg.ID, m.ID, checkNone, true); err == nil {
						continue
					}
				}
				_, _, _ = q.runAbort(j, stateLost, "worker "+w.cfg.ID+" shut down", checkNone, w.cfg.ID, w.ownStream, m.ID, true)
			}
		}
	}
}
