package queue

import "github.com/redis/go-redis/v9"

// The Lua scripts below make every state change of a job atomic. A job's
// hash field "st" moves queued → running → one terminal state (ok, failed,
// dead, canceled, deadline, lost) exactly once: whoever writes the terminal
// state first wins and later writers are told so. The hash field "att" is
// the delivery count and the fencing token: each start increments it, and
// a worker may heartbeat or finish only while "att" still equals the token
// it started with.

// submitScript admits and enqueues a job, or reports the existing one.
//
// KEYS: job, target stream, active, owner, session key, alive key of the
// expected worker (the last two are the job key when unused).
// ARGV: id, now ms, deadline ms, max depth, max per owner, owner, reply
// channel, result TTL ms, payload, session, expected worker, enqueued µs.
//
// Its first command is a write Redis refuses when full (maxmemory with
// noeviction), so a full Redis refuses the submission before anything is
// enqueued; the job hash it creates is removed again on any refusal.
var submitScript = redis.NewScript(`
if redis.call('HSETNX', KEYS[1], 'st', 'queued') == 0 then
  return {'exists', redis.call('HGET', KEYS[1], 'st')}
end
local function refuse(a, b)
  redis.call('DEL', KEYS[1])
  return {a, b}
end
local now = tonumber(ARGV[2])
local dl = tonumber(ARGV[3])
if ARGV[11] ~= '' then
  if redis.call('GET', KEYS[5]) ~= ARGV[11] then return refuse('moved', '') end
  if redis.call('EXISTS', KEYS[6]) == 0 then
    redis.call('DEL', KEYS[5])
    return refuse('lost', '')
  end
end
local function full(key, max)
  if redis.call('ZCARD', key) < max then return false end
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  return redis.call('ZCARD', key) >= max
end
local maxDepth = tonumber(ARGV[4])
if maxDepth > 0 and full(KEYS[3], maxDepth) then return refuse('busy', 'depth') end
local maxOwner = tonumber(ARGV[5])
if maxOwner > 0 then
  if full(KEYS[4], maxOwner) then return refuse('busy', 'owner') end
  redis.call('ZADD', KEYS[4], dl, ARGV[1])
  local exp = redis.call('PEXPIRETIME', KEYS[4])
  if exp < dl + 60000 then redis.call('PEXPIREAT', KEYS[4], dl + 60000) end
end
redis.call('ZADD', KEYS[3], dl, ARGV[1])
redis.call('HSET', KEYS[1], 'att', 0, 'owner', ARGV[6], 'reply', ARGV[7], 'dl', ARGV[3], 'sess', ARGV[10])
redis.call('PEXPIREAT', KEYS[1], dl + tonumber(ARGV[8]))
redis.call('XADD', KEYS[2], '*', 'id', ARGV[1], 'owner', ARGV[6], 'sess', ARGV[10], 'dl', ARGV[3], 'enq', ARGV[12], 'reply', ARGV[7], 'pl', ARGV[9])
return {'ok', ''}
`)

// startScript claims a delivered job for one run, skipping finished jobs
// and dead-lettering a job delivered too often.
//
// KEYS: job, stream, dead stream, active, owner.
// ARGV: message ID, group, worker, max deliveries, now ms, result TTL ms, id.
var startScript = redis.NewScript(`
local function drop()
  redis.call('XACK', KEYS[2], ARGV[2], ARGV[1])
  redis.call('XDEL', KEYS[2], ARGV[1])
end
local h = redis.call('HMGET', KEYS[1], 'st', 'dl', 'att', 'reply')
local function over(st, msg, att)
  redis.call('HSET', KEYS[1], 'st', st, 'err', msg, 'att', att)
  redis.call('PEXPIRE', KEYS[1], ARGV[6])
  redis.call('ZREM', KEYS[4], ARGV[7])
  redis.call('ZREM', KEYS[5], ARGV[7])
  if h[4] then redis.call('PUBLISH', h[4], ARGV[7]) end
  drop()
end
local st = h[1]
if not st then drop() return {'gone', 0} end
if st ~= 'queued' and st ~= 'running' then drop() return {'skip', 0} end
if tonumber(h[2]) <= tonumber(ARGV[5]) then
  over('deadline', '', h[3])
  return {'expired', 0}
end
local att = tonumber(h[3]) + 1
if att > tonumber(ARGV[4]) then
  local msg = 'delivered ' .. (att - 1) .. ' times without a result'
  local f = {'id', ARGV[7], 'attempts', tostring(att - 1), 'reason', msg}
  local e = redis.call('XRANGE', KEYS[2], ARGV[1], ARGV[1])
  if e[1] then
    local kv = e[1][2]
    for i = 1, #kv, 2 do
      if kv[i] ~= 'id' then table.insert(f, kv[i]) table.insert(f, kv[i + 1]) end
    end
  end
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', 10000, '*', unpack(f))
  over('dead', msg, att)
  return {'dead', att - 1}
end
redis.call('HSET', KEYS[1], 'st', 'running', 'w', ARGV[3], 'att', att)
return {'run', att}
`)

// finishScript stores a worker's result if its lease (token) is current
// and no outcome exists yet, then acknowledges and deletes the message.
//
// KEYS: job, stream, active, owner, session to bind, session to unbind
// (the session keys are the job key when unused).
// ARGV: message ID, group, token, state, out, err, result TTL ms, id,
// worker, bind flag, unbind flag, session TTL ms, owner-limit flag.
var finishScript = redis.NewScript(`
local function drop()
  redis.call('XACK', KEYS[2], ARGV[2], ARGV[1])
  redis.call('XDEL', KEYS[2], ARGV[1])
end
local h = redis.call('HMGET', KEYS[1], 'st', 'att', 'reply')
local st = h[1]
if not st then drop() return 'gone' end
if h[2] ~= ARGV[3] then return 'stale' end
if st ~= 'running' then drop() return 'late' end
redis.call('HSET', KEYS[1], 'st', ARGV[4], 'out', ARGV[5], 'err', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[7])
redis.call('ZREM', KEYS[3], ARGV[8])
if ARGV[13] == '1' then redis.call('ZREM', KEYS[4], ARGV[8]) end
if ARGV[11] == '1' and redis.call('GET', KEYS[6]) == ARGV[9] then redis.call('DEL', KEYS[6]) end
if ARGV[10] == '1' then redis.call('SET', KEYS[5], ARGV[9], 'PX', ARGV[12]) end
if h[3] then redis.call('PUBLISH', h[3], ARGV[8]) end
drop()
return 'ok'
`)

// abortScript ends an unfinished job from outside a run: the caller
// cancelled or timed out, the session's worker is gone, or the worker is
// leaving. Optionally only when the worker's liveness key is gone, and
// optionally acknowledging a message.
//
// KEYS: job, active, owner, alive key, session key, stream (the last three
// are the job key when unused).
// ARGV: state, err, result TTL ms, id, cancel channel, check-alive flag,
// session's worker, message ID (empty when none), group.
var abortScript = redis.NewScript(`
if ARGV[8] ~= '' then
  redis.call('XACK', KEYS[6], ARGV[9], ARGV[8])
  redis.call('XDEL', KEYS[6], ARGV[8])
end
local st = redis.call('HGET', KEYS[1], 'st')
if not st then return 'gone' end
if st ~= 'queued' and st ~= 'running' then return 'done' end
if ARGV[6] == '1' then
  if redis.call('EXISTS', KEYS[4]) == 1 then return 'alive' end
  if redis.call('GET', KEYS[5]) == ARGV[7] then redis.call('DEL', KEYS[5]) end
end
redis.call('HSET', KEYS[1], 'st', ARGV[1], 'err', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('ZREM', KEYS[2], ARGV[4])
redis.call('ZREM', KEYS[3], ARGV[4])
if st == 'running' then redis.call('PUBLISH', ARGV[5], ARGV[4]) end
local reply = redis.call('HGET', KEYS[1], 'reply')
if reply then redis.call('PUBLISH', reply, ARGV[4]) end
return 'ok'
`)

// heartbeatScript extends a running job's visibility (resets its idle
// time) while the caller's lease is current. It returns 1 when extended,
// 0 when the job has ended and -1 when another worker took it over.
//
// KEYS: job, stream. ARGV: token, group, consumer, message ID.
var heartbeatScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'st')
if not st then return 0 end
if redis.call('HGET', KEYS[1], 'att') ~= ARGV[1] then return -1 end
if st ~= 'running' then return 0 end
redis.call('XCLAIM', KEYS[2], ARGV[2], ARGV[3], 0, ARGV[4], 'JUSTID')
return 1
`)

// unbindScript deletes a session binding if it still points at the worker.
//
// KEYS: session key. ARGV: worker.
var unbindScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
