package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/airlock-dev/airlock/core"
)

// Redis is the Store for --redis deployments, shared by any number of
// processes. Keys (prefix P, owner O, kind K, id I):
//
//	P{O}:K:I       record: hash {value, version}
//	P{O}:K#idx     sorted set of the kind's record ids (score 0, lex order), for List
//	P{O}:K#log:I   log: stream with ids "SEQ-1"
//	P{O}:K#ctr:I   counter: string
//
// The owner is the hash tag ("{_}" for ""), so all keys of one owner share
// a Cluster slot and every script touches one slot. Bounds: values and log
// entries at most MaxValueSize; logs at most maxLen entries (exactly
// trimmed, DefaultMaxLogLen by default); every key carries the TTL its
// caller gave (the index lives as long as its longest-lived record and
// drops ids of expired records when List meets them); a record, log or
// counter written without a TTL has none. Kinds must not contain ':' or
// '#'.
//
// A Redis at maxmemory (noeviction) refuses every write before anything
// is written, returned as ErrUnavailable, as are connection failures: for
// a connection lost after the command was sent the write may still have
// been applied, so callers retry with conditions (IfVersion) or idempotent
// values.
type Redis struct {
	rdb       redis.UniversalClient
	prefix    string
	opTimeout time.Duration
	closed    atomic.Bool
}

// OpTimeout bounds an operation of the Redis store on one record, log or
// counter (plus a second per 4 MiB it sends), and List's first round trip,
// whatever deadline the caller's context has, as the queue's SubmitTimeout
// bounds a submission: a stalled Redis is an outage (ErrUnavailable)
// within it, not a wait on the client's read timeout and its retry. Reads
// of many values at once (List's values, Range), whose replies may be
// large, are left to the caller's deadline and the client's read timeout;
// a blocking Range waits as asked, each block bounded by its length plus
// OpTimeout.
const OpTimeout = 2 * time.Second

// NewRedis returns a Store on rdb with every key under prefix (for
// example "airlock:state:"). The client stays the caller's: Close does
// not close it. Build it with ContextTimeoutEnabled (queue.NewRedisClient
// does) so that OpTimeout and a caller's deadline bound a call to a
// stalled Redis; without it only the client's read timeout does.
func NewRedis(rdb redis.UniversalClient, prefix string) *Redis {
	return &Redis{rdb: rdb, prefix: prefix, opTimeout: OpTimeout}
}

// bound returns ctx bounded for one round trip that sends n bytes.
func (r *Redis) bound(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.opTimeout+time.Duration(n)*time.Second/(4<<20))
}

// maxBlockChunk bounds one XREAD BLOCK, so a Range abandoned by its
// context frees its connection soon.
const maxBlockChunk = 5 * time.Second

// ownerTag is the owner's hash tag, with the characters that would end a
// tag early escaped.
func ownerTag(owner string) string {
	if owner == "" {
		return "{_}"
	}
	if strings.ContainsAny(owner, "{}%") || owner == "_" {
		r := strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D", "_", "%5F")
		owner = r.Replace(owner)
	}
	return "{" + owner + "}"
}

func (r *Redis) base(kind, owner string) string { return r.prefix + ownerTag(owner) + ":" + kind }

func (r *Redis) recKey(k Key) string              { return r.base(k.Kind, k.Owner) + ":" + k.ID }
func (r *Redis) idxKey(kind, owner string) string { return r.base(kind, owner) + "#idx" }
func (r *Redis) logKey(k Key) string              { return r.base(k.Kind, k.Owner) + "#log:" + k.ID }
func (r *Redis) ctrKey(k Key) string              { return r.base(k.Kind, k.Owner) + "#ctr:" + k.ID }

func (r *Redis) check(op string, kind string) error {
	if r.closed.Load() {
		return fmt.Errorf("state: redis %s: closed: %w", op, ErrUnavailable)
	}
	if kind == "" || strings.ContainsAny(kind, ":#") {
		return core.E("state", core.ErrInvalid, fmt.Errorf("redis %s: kind %q is empty or contains ':' or '#'", op, kind))
	}
	return nil
}

// mapErr turns a Redis failure into this package's errors: OOM, loading,
// read-only replicas, cluster-down, connection failures and a caller's
// deadline passing while Redis does not answer are ErrUnavailable; a
// cancelled context keeps its error; anything else (a bug: wrong type,
// script error) is core.ErrInternal.
func (r *Redis) mapErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("state: redis %s: %w", op, ctx.Err())
	}
	if ctx.Err() != nil {
		// The caller's deadline passed waiting for Redis: an outage to the
		// caller (503), with the deadline kept for errors.Is.
		return fmt.Errorf("state: redis %s: %w: %w", op, ErrUnavailable, ctx.Err())
	}
	var re redis.Error
	if errors.As(err, &re) && !isNetErr(err) {
		msg := re.Error()
		for _, p := range []string{"OOM ", "LOADING ", "READONLY ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ", "BUSY ", "NOREPLICAS ", "MISCONF "} {
			if strings.HasPrefix(msg, p) {
				return fmt.Errorf("state: redis %s: %v: %w", op, err, ErrUnavailable)
			}
		}
		return core.E("state", core.ErrInternal, fmt.Errorf("redis %s: %w", op, err))
	}
	return fmt.Errorf("state: redis %s: %v: %w", op, err, ErrUnavailable)
}

func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, context.DeadlineExceeded)
}

func ms(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	if m := d.Milliseconds(); m > 0 {
		return m
	}
	return 1
}

// Put writes a record (one EVALSHA).
func (r *Redis) Put(ctx context.Context, k Key, value []byte, opt PutOptions) (int64, error) {
	if err := r.check("put", k.Kind); err != nil {
		return 0, err
	}
	if err := checkSize("put", k, len(value)); err != nil {
		return 0, err
	}
	ctx, cancel := r.bound(ctx, len(value))
	defer cancel()
	v, err := scriptPut.Run(ctx, r.rdb, []string{r.recKey(k), r.idxKey(k.Kind, k.Owner)},
		value, opt.IfVersion, ms(opt.TTL), k.ID).Int64()
	if err != nil {
		return 0, r.mapErr(ctx, "put "+k.Kind+"/"+k.ID, err)
	}
	if v < 0 {
		if opt.IfVersion == -1 {
			return 0, fmt.Errorf("create %s/%s: %w", k.Kind, k.ID, ErrConflict)
		}
		return 0, fmt.Errorf("update %s/%s: %w", k.Kind, k.ID, ErrConflict)
	}
	return v, nil
}

// Get reads a record (one EVALSHA).
func (r *Redis) Get(ctx context.Context, k Key) (Item, error) {
	if err := r.check("get", k.Kind); err != nil {
		return Item{}, err
	}
	ctx, cancel := r.bound(ctx, 0)
	defer cancel()
	res, err := scriptGet.Run(ctx, r.rdb, []string{r.recKey(k)}).Slice()
	if errors.Is(err, redis.Nil) {
		return Item{}, fmt.Errorf("get %s/%s: %w", k.Kind, k.ID, ErrNotFound)
	}
	if err != nil {
		return Item{}, r.mapErr(ctx, "get "+k.Kind+"/"+k.ID, err)
	}
	it, ok := itemOf(k, res[0], res[1], res[2], time.Now())
	if !ok {
		return Item{}, fmt.Errorf("get %s/%s: %w", k.Kind, k.ID, ErrNotFound)
	}
	return it, nil
}

// itemOf builds an Item from a value, a version and a PTTL as Redis
// returned them.
func itemOf(k Key, value, version, pttl any, now time.Time) (Item, bool) {
	s, ok := value.(string)
	if !ok {
		return Item{}, false
	}
	v, err := toInt(version)
	if err != nil || v <= 0 {
		return Item{}, false
	}
	it := Item{Key: k, Value: []byte(s), Version: v}
	if t, err := toInt(pttl); err == nil && t >= 0 {
		it.Expires = now.Add(time.Duration(t) * time.Millisecond)
	} else if err == nil && t == -2 {
		return Item{}, false
	}
	return it, true
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	default:
		return 0, fmt.Errorf("unexpected %T", v)
	}
}

// Delete removes a record (one EVALSHA).
func (r *Redis) Delete(ctx context.Context, k Key, ifVersion int64) error {
	if err := r.check("delete", k.Kind); err != nil {
		return err
	}
	ctx, cancel := r.bound(ctx, 0)
	defer cancel()
	res, err := scriptDelete.Run(ctx, r.rdb, []string{r.recKey(k), r.idxKey(k.Kind, k.Owner)}, ifVersion, k.ID).Int64()
	if err != nil {
		return r.mapErr(ctx, "delete "+k.Kind+"/"+k.ID, err)
	}
	if res < 0 {
		return fmt.Errorf("delete %s/%s: %w", k.Kind, k.ID, ErrConflict)
	}
	return nil
}

// List returns live records of kind and owner ordered by id: a
// ZRANGEBYLEX on the index, then one pipelined HMGET+PTTL per id; ids of
// records that have expired are removed from the index.
func (r *Redis) List(ctx context.Context, kind, owner, after string, limit int) ([]Item, error) {
	if err := r.check("list", kind); err != nil {
		return nil, err
	}
	idx := r.idxKey(kind, owner)
	var out []Item
	for {
		batch := 100
		if limit > 0 {
			batch = limit - len(out)
		}
		min := "-"
		if after != "" {
			min = "(" + after
		}
		bctx, cancel := r.bound(ctx, 0)
		ids, err := r.rdb.ZRangeByLex(bctx, idx, &redis.ZRangeBy{Min: min, Max: "+", Count: int64(batch)}).Result()
		if err != nil {
			err = r.mapErr(bctx, "list "+kind, err)
			cancel()
			return nil, err
		}
		cancel()
		if len(ids) == 0 {
			return out, nil
		}
		pipe := r.rdb.Pipeline()
		vals := make([]*redis.SliceCmd, len(ids))
		ttls := make([]*redis.DurationCmd, len(ids))
		for i, id := range ids {
			k := Key{Kind: kind, Owner: owner, ID: id}
			vals[i] = pipe.HMGet(ctx, r.recKey(k), "value", "version")
			ttls[i] = pipe.PTTL(ctx, r.recKey(k))
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return nil, r.mapErr(ctx, "list "+kind, err)
		}
		now := time.Now()
		var gone []any
		for i, id := range ids {
			k := Key{Kind: kind, Owner: owner, ID: id}
			v := vals[i].Val()
			pttl := int64(-1)
			if d := ttls[i].Val(); d >= 0 {
				pttl = d.Milliseconds()
			} else if d == -2 {
				pttl = -2
			}
			if len(v) != 2 {
				gone = append(gone, id)
				continue
			}
			it, ok := itemOf(k, v[0], v[1], pttl, now)
			if !ok {
				gone = append(gone, id)
				continue
			}
			out = append(out, it)
		}
		if len(gone) > 0 {
			// Best effort: a full Redis still allows ZREM.
			_ = r.rdb.ZRem(ctx, idx, gone...).Err()
		}
		after = ids[len(ids)-1]
		if (limit > 0 && len(out) >= limit) || len(ids) < batch {
			return out, nil
		}
	}
}

// Append adds an entry to a log (one EVALSHA).
func (r *Redis) Append(ctx context.Context, k Key, data []byte, maxLen int, ttl time.Duration) (int64, error) {
	if err := r.check("append", k.Kind); err != nil {
		return 0, err
	}
	if err := checkSize("append", k, len(data)); err != nil {
		return 0, err
	}
	ctx, cancel := r.bound(ctx, len(data))
	defer cancel()
	if maxLen <= 0 {
		maxLen = DefaultMaxLogLen
	}
	seq, err := scriptAppend.Run(ctx, r.rdb, []string{r.logKey(k)}, data, maxLen, ms(ttl)).Int64()
	if err != nil {
		return 0, r.mapErr(ctx, "append "+k.Kind+"/"+k.ID, err)
	}
	return seq, nil
}

// Range reads entries after a sequence number: XRANGE, or XREAD BLOCK
// when waiting (woken by an Append of any process). A cancelled context
// returns at once; the blocked command finishes within maxBlockChunk.
func (r *Redis) Range(ctx context.Context, k Key, after int64, limit int, wait time.Duration) ([]Entry, error) {
	if err := r.check("range", k.Kind); err != nil {
		return nil, err
	}
	key := r.logKey(k)
	if after < 0 {
		after = 0
	}
	if wait <= 0 {
		cmd := r.rdb.XRangeN(ctx, key, strconv.FormatInt(after+1, 10)+"-0", "+", int64(limit))
		if limit <= 0 {
			cmd = r.rdb.XRange(ctx, key, strconv.FormatInt(after+1, 10)+"-0", "+")
		}
		msgs, err := cmd.Result()
		if err != nil {
			return nil, r.mapErr(ctx, "range "+k.Kind+"/"+k.ID, err)
		}
		return entriesOf(msgs), nil
	}
	deadline := time.Now().Add(wait)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		chunk := min(left, maxBlockChunk)
		type result struct {
			streams []redis.XStream
			err     error
		}
		done := make(chan result, 1)
		go func() {
			bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chunk+r.opTimeout)
			defer cancel()
			s, err := r.rdb.XRead(bctx, &redis.XReadArgs{Streams: []string{key, strconv.FormatInt(after, 10) + "-1"},
				Count: int64(limit), Block: max(chunk, time.Millisecond)}).Result()
			done <- result{s, err}
		}()
		var res result
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("state: range %s/%s: %w", k.Kind, k.ID, ctx.Err())
		case res = <-done:
		}
		if errors.Is(res.err, redis.Nil) {
			continue
		}
		if res.err != nil {
			return nil, r.mapErr(ctx, "range "+k.Kind+"/"+k.ID, res.err)
		}
		for _, s := range res.streams {
			if e := entriesOf(s.Messages); len(e) > 0 {
				return e, nil
			}
		}
	}
}

func entriesOf(msgs []redis.XMessage) []Entry {
	if len(msgs) == 0 {
		return nil
	}
	out := make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		seqStr, _, _ := strings.Cut(m.ID, "-")
		seq, err := strconv.ParseInt(seqStr, 10, 64)
		if err != nil {
			continue
		}
		d, _ := m.Values["d"].(string)
		out = append(out, Entry{Seq: seq, Data: []byte(d)})
	}
	return out
}

// DeleteLog removes a log (DEL).
func (r *Redis) DeleteLog(ctx context.Context, k Key) error {
	if err := r.check("delete log", k.Kind); err != nil {
		return err
	}
	ctx, cancel := r.bound(ctx, 0)
	defer cancel()
	return r.mapErr(ctx, "delete log "+k.Kind+"/"+k.ID, r.rdb.Del(ctx, r.logKey(k)).Err())
}

// Add changes a counter within a limit (one EVALSHA).
func (r *Redis) Add(ctx context.Context, k Key, delta, limit int64, ttl time.Duration) (int64, error) {
	if err := r.check("add", k.Kind); err != nil {
		return 0, err
	}
	ctx, cancel := r.bound(ctx, 0)
	defer cancel()
	res, err := scriptAdd.Run(ctx, r.rdb, []string{r.ctrKey(k)}, delta, limit, ms(ttl)).Int64Slice()
	if err != nil {
		return 0, r.mapErr(ctx, "add "+k.Kind+"/"+k.ID, err)
	}
	if len(res) != 2 {
		return 0, core.E("state", core.ErrInternal, fmt.Errorf("redis add %s/%s: reply %v", k.Kind, k.ID, res))
	}
	if res[0] == 0 {
		return res[1], fmt.Errorf("counter %s/%s at %d of %d: %w", k.Kind, k.ID, res[1], limit, ErrLimit)
	}
	return res[1], nil
}

// Ping checks that Redis answers and accepts writes: it writes a
// 10-second probe key, which a Redis at maxmemory refuses.
func (r *Redis) Ping(ctx context.Context) error {
	if r.closed.Load() {
		return fmt.Errorf("state: redis ping: closed: %w", ErrUnavailable)
	}
	ctx, cancel := r.bound(ctx, 0)
	defer cancel()
	return r.mapErr(ctx, "ping", r.rdb.Set(ctx, r.prefix+"{_}:ping", "1", 10*time.Second).Err())
}

// Close makes later calls fail with ErrUnavailable; the client stays
// open (it is the caller's).
func (r *Redis) Close() error {
	r.closed.Store(true)
	return nil
}
