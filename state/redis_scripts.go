package state

import "github.com/redis/go-redis/v9"

// The scripts read and check first and make their first write a command
// Redis refuses when it is at maxmemory (HSET, XADD, SET), so a full Redis
// answers OOM before anything is written. They touch only the keys passed
// in KEYS, which share the owner's hash tag (one Cluster slot).

// scriptPut: KEYS record, index; ARGV value, ifVersion, ttl ms, id.
// Returns the new version, or -1 for a failed condition.
var scriptPut = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'version')
local ifv = tonumber(ARGV[2])
if ifv == -1 and v then return -1 end
if ifv > 0 and ((not v) or tonumber(v) ~= ifv) then return -1 end
local nv = 1
if v then nv = tonumber(v) + 1 end
redis.call('HSET', KEYS[1], 'value', ARGV[1], 'version', nv)
local ttl = tonumber(ARGV[3])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) else redis.call('PERSIST', KEYS[1]) end
local had = redis.call('EXISTS', KEYS[2])
redis.call('ZADD', KEYS[2], 0, ARGV[4])
if ttl <= 0 then
  redis.call('PERSIST', KEYS[2])
elseif had == 0 then
  redis.call('PEXPIRE', KEYS[2], ttl)
else
  local cur = redis.call('PTTL', KEYS[2])
  if cur >= 0 and cur < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
end
return nv
`)

// scriptGet: KEYS record. Returns {value, version, pttl} or nil.
var scriptGet = redis.NewScript(`
local r = redis.call('HMGET', KEYS[1], 'value', 'version')
if not r[2] then return false end
return {r[1], tonumber(r[2]), redis.call('PTTL', KEYS[1])}
`)

// scriptDelete: KEYS record, index; ARGV ifVersion, id. Returns 1, or -1
// for a failed condition.
var scriptDelete = redis.NewScript(`
local ifv = tonumber(ARGV[1])
if ifv > 0 then
  local v = redis.call('HGET', KEYS[1], 'version')
  if (not v) or tonumber(v) ~= ifv then return -1 end
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return 1
`)

// scriptAppend: KEYS stream; ARGV data, maxLen, ttl ms. Entry ids are
// "SEQ-1" with SEQ dense from 1; trimming is exact. Returns SEQ.
var scriptAppend = redis.NewScript(`
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local seq = 1
if last[1] then seq = tonumber(string.match(last[1][1], '^(%d+)')) + 1 end
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[2], seq .. '-1', 'd', ARGV[1])
local ttl = tonumber(ARGV[3])
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) else redis.call('PERSIST', KEYS[1]) end
return seq
`)

// scriptAdd: KEYS counter; ARGV delta, limit, ttl ms. Returns {applied
// (1/0), value}.
var scriptAdd = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local d = tonumber(ARGV[1])
local lim = tonumber(ARGV[2])
if d > 0 and lim > 0 and cur + d > lim then return {0, cur} end
local nv = cur + d
if nv <= 0 then
  redis.call('DEL', KEYS[1])
  return {1, nv}
end
local ttl = tonumber(ARGV[3])
if ttl > 0 then
  redis.call('SET', KEYS[1], nv, 'PX', ttl)
else
  redis.call('SET', KEYS[1], nv, 'KEEPTTL')
end
return {1, nv}
`)
