package queue

import "github.com/redis/go-redis/v9"

// The Lua scripts below make every state change of a job atomic. The
// active sorted set holds each job ID scored by its deadline (ms) while it
// is live; ending the job moves the score to deadline − terminalOffset
// with "ZADD XX LT CH", which succeeds exactly once per job: that single
// command is the compare-and-set that gives a job one outcome, whoever
// writes it (worker, caller cancel or deadline, dead-lettering, session
// loss). The winner then stores the encoded outcome in the job's result
// key and publishes it in a done notice, so callers need no read.
//
// Scripts that write start with "#!lua": Redis refuses such a script as a
// whole when it is over maxmemory (noeviction), before any command in it
// runs, so a full Redis never half-applies one. The heartbeat script has no
// shebang and no command Redis refuses when full, so leases are renewed
// while Redis is full.
//
// Commands per one-shot call on the normal path (INFO commandstats counts
// a script's inner commands too): submit 4 (EVALSHA, ZADD NX, ZCOUNT,
// XADD), delivery 1 (XREADGROUP), finish 4 (EVALSHA, ZADD XX LT CH, SET,
// PUBLISH); XACK and XDEL are batched (see redis_acks.go).

// submitScript admits and enqueues a job, attaches to the live job with
// the same ID, or returns the stored outcome of a finished one.
//
// KEYS: active, result, target stream, owner set, session key, alive key of
// the expected worker (unused ones are the active key).
// ARGV: id, now ms, deadline ms, max depth, max per owner, owner, reply
// channel, payload, session, expected worker, enqueued µs, result TTL ms,
// encoded deadline outcome.
//
// Returns {"ok", entry ID}, {"exists"}, {"done", outcome}, {"busy",
// "depth"|"owner"}, {"moved"} or {"lost"}.
var submitScript = redis.NewScript(`#!lua
local id, now, dl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('ZADD', KEYS[1], 'NX', dl, id) == 0 then
  local sc = tonumber(redis.call('ZSCORE', KEYS[1], id))
  if sc > now then return {'exists'} end
  if sc >= 0 then
    -- live past its deadline and nobody recorded it: it ended by deadline
    redis.call('ZADD', KEYS[1], 'XX', sc - ` + terminalOffsetLua + `, id)
    redis.call('SET', KEYS[2], ARGV[13], 'PX', ARGV[12])
    return {'done', ARGV[13]}
  end
  local v = redis.call('GET', KEYS[2])
  if v then return {'done', v} end
  -- ended, but its outcome expired: this is a new job under the same ID
  redis.call('ZADD', KEYS[1], dl, id)
end
local function refuse(a, b)
  redis.call('ZREM', KEYS[1], id)
  return {a, b}
end
if ARGV[10] ~= '' then
  if redis.call('GET', KEYS[5]) ~= ARGV[10] then return refuse('moved', '') end
  if redis.call('EXISTS', KEYS[6]) == 0 then
    redis.call('DEL', KEYS[5])
    return refuse('lost', '')
  end
end
local maxDepth = tonumber(ARGV[4])
if maxDepth > 0 and redis.call('ZCOUNT', KEYS[1], now, '+inf') > maxDepth then
  return refuse('busy', 'depth')
end
local maxOwner = tonumber(ARGV[5])
if maxOwner > 0 then
  redis.call('ZADD', KEYS[4], dl, id)
  if redis.call('ZCOUNT', KEYS[4], now, '+inf') > maxOwner then
    redis.call('ZREM', KEYS[4], id)
    return refuse('busy', 'owner')
  end
  if redis.call('PEXPIRETIME', KEYS[4]) < dl + 60000 then redis.call('PEXPIREAT', KEYS[4], dl + 600000) end
end
local eid = redis.call('XADD', KEYS[3], '*', 'id', id, 'owner', ARGV[6], 'sess', ARGV[9],
  'dl', ARGV[3], 'enq', ARGV[11], 'reply', ARGV[7], 'pl', ARGV[8])
return {'ok', eid}
`)

// terminalOffsetLua is terminalOffset as a Lua literal.
const terminalOffsetLua = "10000000000000"

// finishScript records a worker's outcome if the job has none yet, and
// acknowledges and deletes the worker's batch of finished entries when one
// is due.
//
// KEYS: active, result, stream, owner set, session to bind, session to
// unbind (unused ones are the active key).
// ARGV: id, terminal score, encoded outcome, result TTL ms, reply channel,
// owner flag, bind flag, unbind flag, worker, session TTL ms, group,
// message ID, token, notice prefix, entry IDs to XACK and XDEL...
//
// Returns "ok" (recorded), "late" (the job had ended) or "stale" (ended,
// and this worker no longer held the entry: another one took it over).
var finishScript = redis.NewScript(`#!lua
local verdict = 'ok'
if redis.call('ZADD', KEYS[1], 'XX', 'LT', 'CH', ARGV[2], ARGV[1]) == 0 then
  local p = redis.call('XPENDING', KEYS[3], ARGV[11], ARGV[12], ARGV[12], 1)
  if not p[1] or p[1][2] ~= ARGV[9] or tostring(p[1][4]) ~= ARGV[13] then
    verdict = 'stale'
  else
    verdict = 'late'
  end
else
  redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
  if ARGV[6] == '1' then redis.call('ZREM', KEYS[4], ARGV[1]) end
  if ARGV[8] == '1' and redis.call('GET', KEYS[6]) == ARGV[9] then redis.call('DEL', KEYS[6]) end
  if ARGV[7] == '1' then redis.call('SET', KEYS[5], ARGV[9], 'PX', ARGV[10]) end
  if ARGV[5] ~= '' then redis.call('PUBLISH', ARGV[5], ARGV[14] .. ARGV[3]) end
end
if #ARGV > 14 then
  redis.call('XACK', KEYS[3], ARGV[11], unpack(ARGV, 15))
  redis.call('XDEL', KEYS[3], unpack(ARGV, 15))
end
return verdict
`)

// abortScript ends a job from outside a run: its caller cancelled or timed
// out, its session's worker is gone (when checking: only if that worker's
// liveness key is gone, or only if no connection holds its pulse
// subscription), or its worker is leaving. It optionally deletes (and
// acknowledges) the job's stream entry, so an unread job never runs.
//
// KEYS: active, result, owner set, stream, alive key, session key (unused
// ones are the active key).
// ARGV: id, (unused), encoded outcome, result TTL ms, cancel channel,
// notice prefix, message ID ("" when unknown), check ("", "alive" or
// "pulse"), session's worker, owner flag, ack flag, group, the worker's
// pulse channel. The terminal score is derived from the live score (the
// job's own deadline): an attached caller does not know it.
//
// Returns {"ok"}, {"done", outcome} (another outcome won), {"gone"} or
// {"alive"}.
var abortScript = redis.NewScript(`#!lua
if ARGV[8] == 'alive' and redis.call('EXISTS', KEYS[5]) == 1 then return {'alive'} end
if ARGV[8] == 'pulse' and redis.call('PUBSUB', 'NUMSUB', ARGV[13])[2] > 0 then return {'alive'} end
local won = 0
local sc = redis.call('ZSCORE', KEYS[1], ARGV[1])
if sc and tonumber(sc) >= 0 then
  redis.call('ZADD', KEYS[1], 'XX', tonumber(sc) - ` + terminalOffsetLua + `, ARGV[1])
  won = 1
end
if ARGV[7] ~= '' then
  if ARGV[11] == '1' then redis.call('XACK', KEYS[4], ARGV[12], ARGV[7]) end
  redis.call('XDEL', KEYS[4], ARGV[7])
end
if ARGV[8] ~= '' and redis.call('GET', KEYS[6]) == ARGV[9] then redis.call('DEL', KEYS[6]) end
if won == 0 then
  local v = redis.call('GET', KEYS[2])
  if v then return {'done', v} end
  return {'gone'}
end
redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4])
if ARGV[10] == '1' then redis.call('ZREM', KEYS[3], ARGV[1]) end
redis.call('PUBLISH', ARGV[5], ARGV[6] .. ARGV[3])
return {'ok'}
`)

// takeoverScript judges an entry this worker reclaimed (XAUTOCLAIM) or
// recovered from its own pending list: skip it if the job ended or its
// deadline passed, dead-letter it past MaxDeliveries, else run it with its
// delivery count as the attempt and fencing token.
//
// KEYS: stream, active, result, dead stream, owner set.
// ARGV: message ID, group, worker, max deliveries, now ms, result TTL ms,
// id, terminal score, reply channel, notice prefix, owner flag.
//
// Returns {"run", attempt}, {"dead", deliveries}, {"skip"|"expired"|"gone", n}.
var takeoverScript = redis.NewScript(`#!lua
local p = redis.call('XPENDING', KEYS[1], ARGV[2], ARGV[1], ARGV[1], 1)
if not p[1] or p[1][2] ~= ARGV[3] then return {'gone', 0} end
local att = p[1][4]
local function drop()
  redis.call('XACK', KEYS[1], ARGV[2], ARGV[1])
  redis.call('XDEL', KEYS[1], ARGV[1])
end
local sc = redis.call('ZSCORE', KEYS[2], ARGV[7])
if not sc or tonumber(sc) < 0 then drop() return {'skip', att} end
if tonumber(sc) <= tonumber(ARGV[5]) then drop() return {'expired', att} end
if att > tonumber(ARGV[4]) then
  local n = att - 1
  local msg = 'delivered ' .. n .. ' times without a result'
  local f = {'id', ARGV[7], 'attempts', tostring(n), 'reason', msg}
  local e = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])
  if e[1] then
    local kv = e[1][2]
    for i = 1, #kv, 2 do
      if kv[i] ~= 'id' then table.insert(f, kv[i]) table.insert(f, kv[i + 1]) end
    end
  end
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', 10000, '*', unpack(f))
  if redis.call('ZADD', KEYS[2], 'XX', 'LT', 'CH', ARGV[8], ARGV[7]) == 1 then
    local v = 'dead:' .. #msg .. ':' .. msg .. #ARGV[3] .. ':' .. ARGV[3]
    redis.call('SET', KEYS[3], v, 'PX', ARGV[6])
    if ARGV[11] == '1' then redis.call('ZREM', KEYS[5], ARGV[7]) end
    if ARGV[9] ~= '' then redis.call('PUBLISH', ARGV[9], ARGV[10] .. v) end
  end
  drop()
  return {'dead', n}
end
return {'run', att}
`)

// heartbeatScript extends a running job's visibility (resets its idle
// time without counting a delivery) while this worker holds the entry with
// its token (delivery count). It returns 1 when extended, 0 when the job
// has ended and -1 when another worker took it over (it holds the entry,
// or already acknowledged it: callers that end a job delete its entry but
// leave the acknowledgement to the worker running it).
//
// KEYS: stream, active. ARGV: group, consumer, message ID, token, id.
var heartbeatScript = redis.NewScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
-- not pending: only a worker that took it over acknowledges a running entry
if not p[1] or p[1][2] ~= ARGV[2] or tostring(p[1][4]) ~= ARGV[4] then return -1 end
local sc = redis.call('ZSCORE', KEYS[2], ARGV[5])
if not sc or tonumber(sc) < 0 then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
return 1
`)

// outcomeScript reads a job's outcome for a caller that missed its notice.
//
// KEYS: result, active. ARGV: id.
// Returns {"done", outcome}, {"live"}, {"expired"} or {"gone"}.
var outcomeScript = redis.NewScript(`#!lua flags=no-writes
local v = redis.call('GET', KEYS[1])
if v then return {'done', v} end
local sc = redis.call('ZSCORE', KEYS[2], ARGV[1])
if not sc then return {'gone'} end
if tonumber(sc) < 0 then return {'expired'} end
return {'live'}
`)

// pulseScript counts the connections subscribed to a worker's pulse
// channel. A script only so that Redis Cluster routes it by its key to the
// queue's node, where the worker subscribed.
//
// KEYS: any key of the queue. ARGV: the pulse channel.
var pulseScript = redis.NewScript(`#!lua flags=no-writes
return redis.call('PUBSUB', 'NUMSUB', ARGV[1])[2]
`)

// unbindScript deletes a session binding if it still points at the worker.
//
// KEYS: session key. ARGV: worker.
var unbindScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
