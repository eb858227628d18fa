package queue

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// moveScript moves a live job's entry from a worker's own stream to a
// lane stream: a job sent to an environment's holder that can no longer
// run it (the holder is gone, or shutting down) goes to the lane, where
// any worker takes it and builds the environment first. Conditional on the
// holder being gone as abortScript's check is.
//
// KEYS: active, own stream, lane stream, alive key of the holder.
// ARGV: id, entry ID, check ("", "alive" or "pulse"), pulse channel,
// group, ack flag.
//
// Returns {"alive"}, {"ended"} (the job has an outcome), {"gone"} (the
// entry is no longer there: moved already) or {"moved", new entry ID}.
var moveScript = redis.NewScript(`#!lua
if ARGV[3] == 'alive' and redis.call('EXISTS', KEYS[4]) == 1 then return {'alive'} end
if ARGV[3] == 'pulse' and redis.call('PUBSUB', 'NUMSUB', ARGV[4])[2] > 0 then return {'alive'} end
local sc = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not sc or tonumber(sc) < 0 then return {'ended'} end
local e = redis.call('XRANGE', KEYS[2], ARGV[2], ARGV[2])
if #e == 0 then return {'gone'} end
if ARGV[6] == '1' then redis.call('XACK', KEYS[2], ARGV[5], ARGV[2]) end
redis.call('XDEL', KEYS[2], ARGV[2])
local eid = redis.call('XADD', KEYS[3], '*', unpack(e[1][2]))
return {'moved', eid}
`)

// moveEnvJob moves environment job j, sent to worker's own stream as
// entry, to its lane if check finds worker gone. It returns the script's
// verdict and the new entry ID.
func (q *Redis) moveEnvJob(j Job, worker, entry string, check holderCheck, ack bool) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), q.cfg.SubmitTimeout)
	defer cancel()
	res, err := moveScript.Run(ctx, q.rdb,
		[]string{q.keys.active(), q.keys.workerStream(worker), q.keys.laneStream(j.Lane), q.keys.alive(worker)},
		j.ID, entry, string(check), q.keys.pulse(worker), group, flag(ack)).StringSlice()
	if err != nil {
		return "", "", err
	}
	if len(res) > 1 {
		return res[0], res[1], nil
	}
	return res[0], "", nil
}

// envHolderGone handles the loss of the worker an environment job was
// sent to: the job moves to its lane (or already did, or has ended). It
// reports whether the caller stops watching that worker (sub updated to
// the lane entry when moved) and whether to read the outcome now.
func (q *Redis) envHolderGone(j Job, sub *submission, check holderCheck) (stopWatch, readNow bool) {
	verdict, eid, err := q.moveEnvJob(j, sub.worker, sub.entry, check, false)
	switch {
	case err != nil || verdict == "alive":
		return false, false
	case verdict == "moved":
		q.log.Info("environment job moved to its lane: its holder is gone", "job", j.ID, "worker", sub.worker)
		sub.worker, sub.stream, sub.entry = "", q.keys.laneStream(j.Lane), eid
		return true, false
	case verdict == "ended":
		return true, true
	default: // "gone": the holder moved it at shutdown
		sub.worker, sub.entry = "", ""
		return true, false
	}
}
