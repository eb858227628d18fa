package approvals

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a Store in Redis: pending approvals survive a restart of the
// API process and are visible to every process sharing the Redis. Each
// record is one string key with a PX expiry; a run's tokens are indexed in
// a sorted set (by a put counter) that List and DeleteRun read.
//
// All keys start with the prefix; for Redis Cluster the prefix must hold a
// hash tag (the default does) so that a record and its index share a slot.
type Redis struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// putScript stores a record and, when a run index key is given, adds the
// token to it with the next put number and stretches the index's expiry.
var putScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if #KEYS > 1 then
  local n = redis.call('INCR', KEYS[3])
  redis.call('ZADD', KEYS[2], n, ARGV[3])
  if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
end
return 1`)

// takeScript removes and returns one record atomically (and its index
// entry), so a token is taken exactly once however many callers race.
var takeScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then redis.call('DEL', KEYS[1]) end
if #KEYS > 1 then redis.call('ZREM', KEYS[2], ARGV[1]) end
return v`)

// NewRedis returns a store under prefix (default "airlock:{approvals}")
// whose records without an Expires live for ttl (0: 24h).
func NewRedis(rdb redis.UniversalClient, prefix string, ttl time.Duration) *Redis {
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	if prefix == "" {
		prefix = "airlock:{approvals}"
	}
	return &Redis{rdb: rdb, prefix: prefix, ttl: ttl}
}

// recKey is the key of one record; the run's length keeps (run, token)
// pairs that join to the same text apart.
func (s *Redis) recKey(run, token string) string {
	return s.prefix + ":rec:" + strconv.Itoa(len(run)) + ":" + run + ":" + token
}

// runKey is the sorted set of a run's tokens.
func (s *Redis) runKey(run string) string { return s.prefix + ":run:" + run }

// seqKey is the put counter that orders a run's index.
func (s *Redis) seqKey() string { return s.prefix + ":seq" }

// encode packs the expiry (Unix milliseconds, 0 for none) before the value.
func encode(r Record) []byte {
	var ms int64
	if !r.Expires.IsZero() {
		ms = r.Expires.UnixMilli()
	}
	return append([]byte(strconv.FormatInt(ms, 10)+"\n"), r.Value...)
}

// decode unpacks what encode packed.
func decode(run, token string, b []byte) (Record, error) {
	head, val, ok := bytes.Cut(b, []byte("\n"))
	ms, err := strconv.ParseInt(string(head), 10, 64)
	if !ok || err != nil {
		return Record{}, fmt.Errorf("approvals: malformed record %q of run %q", token, run)
	}
	r := Record{Run: run, Token: token, Value: val}
	if ms != 0 {
		r.Expires = time.UnixMilli(ms)
	}
	return r, nil
}

// Put stores r with a PX expiry from r.Expires (or the store's TTL).
func (s *Redis) Put(ctx context.Context, r Record) error {
	ttl := s.ttl
	if !r.Expires.IsZero() {
		ttl = time.Until(r.Expires)
	}
	ms := max(ttl.Milliseconds(), 1)
	keys := []string{s.recKey(r.Run, r.Token)}
	if r.Run != "" {
		keys = append(keys, s.runKey(r.Run), s.seqKey())
	}
	if err := putScript.Run(ctx, s.rdb, keys, encode(r), ms, r.Token).Err(); err != nil {
		return fmt.Errorf("approvals: store %q: %w", r.Token, err)
	}
	return nil
}

// Take removes and returns the record of (run, token).
func (s *Redis) Take(ctx context.Context, run, token string) (Record, error) {
	keys := []string{s.recKey(run, token)}
	if run != "" {
		keys = append(keys, s.runKey(run))
	}
	v, err := takeScript.Run(ctx, s.rdb, keys, token).Text()
	if errors.Is(err, redis.Nil) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, fmt.Errorf("approvals: take %q: %w", token, err)
	}
	return decode(run, token, []byte(v))
}

// List returns the live records of run in put order. Index entries whose
// record expired are dropped from the index.
func (s *Redis) List(ctx context.Context, run string) ([]Record, error) {
	if run == "" {
		return nil, nil
	}
	tokens, err := s.rdb.ZRange(ctx, s.runKey(run), 0, -1).Result()
	if err != nil {
		return nil, fmt.Errorf("approvals: list run %q: %w", run, err)
	}
	if len(tokens) == 0 {
		return nil, nil
	}
	keys := make([]string, len(tokens))
	for i, t := range tokens {
		keys[i] = s.recKey(run, t)
	}
	vals, err := s.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("approvals: list run %q: %w", run, err)
	}
	var out []Record
	var stale []any
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			stale = append(stale, tokens[i])
			continue
		}
		r, err := decode(run, tokens[i], []byte(str))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if len(stale) > 0 {
		if err := s.rdb.ZRem(ctx, s.runKey(run), stale...).Err(); err != nil {
			return nil, fmt.Errorf("approvals: prune run %q: %w", run, err)
		}
	}
	return out, nil
}

// DeleteRun forgets every record of run; an empty run is a no-op.
func (s *Redis) DeleteRun(ctx context.Context, run string) error {
	if run == "" {
		return nil
	}
	tokens, err := s.rdb.ZRange(ctx, s.runKey(run), 0, -1).Result()
	if err != nil {
		return fmt.Errorf("approvals: delete run %q: %w", run, err)
	}
	keys := []string{s.runKey(run)}
	for _, t := range tokens {
		keys = append(keys, s.recKey(run, t))
	}
	if err := s.rdb.Del(ctx, keys...).Err(); err != nil {
		return fmt.Errorf("approvals: delete run %q: %w", run, err)
	}
	return nil
}
