// Package statetest is the contract suite every state.Store backend
// passes: records (create, compare and swap, conditional delete, TTL
// expiry, List order, paging and owner isolation), logs (dense seqs,
// trimming, Range windows, blocking waits woken by another goroutine,
// context cancellation), counters (limits, removal at 0, TTL) and
// concurrency (CAS increments that lose nothing).
//
// It uses real time with short TTLs (up to a second), so it runs
// against Redis's own expiry as well as the embedded stores.
package statetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
)

// Run runs the contract suite; open returns a fresh, empty store for one
// subtest (the suite closes it).
func Run(t *testing.T, open func(t *testing.T) state.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s state.Store)
	}{
		{"RecordCreate", testCreate},
		{"RecordCAS", testCAS},
		{"RecordDelete", testDelete},
		{"RecordTTL", testRecordTTL},
		{"RecordCopies", testCopies},
		{"ListOrderPagingOwners", testList},
		{"ListSkipsExpired", testListExpired},
		{"LargeValue", testLarge},
		{"ConcurrentCAS", testConcurrentCAS},
		{"LogDenseSeqs", testLogSeqs},
		{"LogTrim", testLogTrim},
		{"LogRangeWindow", testLogRange},
		{"LogDeleteAndTTL", testLogDelete},
		{"LogWaitWoken", testLogWait},
		{"LogWaitTimeout", testLogWaitTimeout},
		{"LogWaitCancel", testLogWaitCancel},
		{"CounterLimit", testCounterLimit},
		{"CounterTTL", testCounterTTL},
		{"CounterConcurrentLimit", testCounterConcurrent},
		{"LazyPut", testLazy},
		{"PingClose", testPingClose},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	t.Cleanup(cancel)
	return c
}

func key(id string) state.Key { return state.Key{Kind: "thing", Owner: "alice", ID: id} }

func mustPut(t *testing.T, s state.Store, k state.Key, v string, opt state.PutOptions) int64 {
	t.Helper()
	ver, err := s.Put(ctx(t), k, []byte(v), opt)
	if err != nil {
		t.Fatalf("put %v: %v", k, err)
	}
	return ver
}

func wantErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: err = %v; want %v", what, err, want)
	}
}

func testCreate(t *testing.T, s state.Store) {
	k := key("r1")
	if v := mustPut(t, s, k, "one", state.PutOptions{IfVersion: -1}); v != 1 {
		t.Fatalf("create version = %d; want 1", v)
	}
	_, err := s.Put(ctx(t), k, []byte("two"), state.PutOptions{IfVersion: -1})
	wantErr(t, err, state.ErrConflict, "second create")
	if core.CodeOf(err) != core.ErrConflict {
		t.Fatalf("code = %v; want conflict", core.CodeOf(err))
	}
	it, err := s.Get(ctx(t), k)
	if err != nil {
		t.Fatal(err)
	}
	if string(it.Value) != "one" || it.Version != 1 || !it.Expires.IsZero() || it.Key != k {
		t.Fatalf("got %+v; want value one, version 1, no expiry", it)
	}
	_, err = s.Get(ctx(t), key("nope"))
	wantErr(t, err, state.ErrNotFound, "get missing")
	if core.CodeOf(err) != core.ErrNotFound {
		t.Fatalf("code = %v; want not_found", core.CodeOf(err))
	}
	// Empty values are values.
	mustPut(t, s, key("empty"), "", state.PutOptions{})
	if it, err := s.Get(ctx(t), key("empty")); err != nil || len(it.Value) != 0 || it.Version != 1 {
		t.Fatalf("empty value: %+v, %v", it, err)
	}
}

func testCAS(t *testing.T, s state.Store) {
	k := key("cas")
	_, err := s.Put(ctx(t), k, []byte("x"), state.PutOptions{IfVersion: 3})
	wantErr(t, err, state.ErrConflict, "CAS on a missing record")
	mustPut(t, s, k, "v1", state.PutOptions{})
	if v := mustPut(t, s, k, "v2", state.PutOptions{IfVersion: 1}); v != 2 {
		t.Fatalf("CAS version = %d; want 2", v)
	}
	_, err = s.Put(ctx(t), k, []byte("stale"), state.PutOptions{IfVersion: 1})
	wantErr(t, err, state.ErrConflict, "stale CAS")
	if v := mustPut(t, s, k, "v3", state.PutOptions{}); v != 3 {
		t.Fatalf("unconditional version = %d; want 3", v)
	}
	it, err := s.Get(ctx(t), k)
	if err != nil || string(it.Value) != "v3" || it.Version != 3 {
		t.Fatalf("got %+v, %v; want v3 at version 3", it, err)
	}
}

func testDelete(t *testing.T, s state.Store) {
	k := key("del")
	if err := s.Delete(ctx(t), k, 0); err != nil {
		t.Fatalf("delete missing: %v", err)
	}
	wantErr(t, s.Delete(ctx(t), k, 1), state.ErrConflict, "delete missing at a version")
	mustPut(t, s, k, "a", state.PutOptions{})
	mustPut(t, s, k, "b", state.PutOptions{})
	wantErr(t, s.Delete(ctx(t), k, 1), state.ErrConflict, "delete at an old version")
	if _, err := s.Get(ctx(t), k); err != nil {
		t.Fatalf("failed conditional delete removed the record: %v", err)
	}
	if err := s.Delete(ctx(t), k, 2); err != nil {
		t.Fatalf("delete at current version: %v", err)
	}
	_, err := s.Get(ctx(t), k)
	wantErr(t, err, state.ErrNotFound, "get deleted")
	if items, err := s.List(ctx(t), k.Kind, k.Owner, "", 0); err != nil || len(items) != 0 {
		t.Fatalf("list after delete = %v, %v", items, err)
	}
	if v := mustPut(t, s, k, "again", state.PutOptions{IfVersion: -1}); v != 1 {
		t.Fatalf("re-create version = %d; want 1", v)
	}
}

func testRecordTTL(t *testing.T, s state.Store) {
	long := key("long")
	before := time.Now()
	mustPut(t, s, long, "long", state.PutOptions{TTL: time.Minute})
	it, err := s.Get(ctx(t), long)
	if err != nil {
		t.Fatal(err)
	}
	if it.Expires.Before(before.Add(time.Minute-5*time.Second)) || it.Expires.After(time.Now().Add(time.Minute+time.Second)) {
		t.Fatalf("expires %v; want about a minute after %v", it.Expires, before)
	}
	k := key("ttl")
	// Scaled: the rewrite of "keep" must land within its first TTL.
	mustPut(t, s, k, "short", state.PutOptions{TTL: testscale.D(300 * time.Millisecond)})
	// A rewrite without TTL keeps it for good.
	keep := key("keep")
	mustPut(t, s, keep, "a", state.PutOptions{TTL: testscale.D(500 * time.Millisecond)})
	mustPut(t, s, keep, "b", state.PutOptions{IfVersion: 1})
	time.Sleep(testscale.D(900 * time.Millisecond))
	_, err = s.Get(ctx(t), k)
	wantErr(t, err, state.ErrNotFound, "get expired")
	if v := mustPut(t, s, k, "new", state.PutOptions{IfVersion: -1}); v != 1 {
		t.Fatalf("create over an expired record: version %d; want 1", v)
	}
	it, err = s.Get(ctx(t), keep)
	if err != nil || string(it.Value) != "b" || !it.Expires.IsZero() {
		t.Fatalf("rewritten without TTL: %+v, %v; want b, no expiry", it, err)
	}
}

func testCopies(t *testing.T, s state.Store) {
	k := key("copy")
	buf := []byte("original")
	mustPut(t, s, k, string(buf), state.PutOptions{})
	if _, err := s.Put(ctx(t), key("copy2"), buf, state.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXX")
	it, err := s.Get(ctx(t), key("copy2"))
	if err != nil || string(it.Value) != "original" {
		t.Fatalf("value changed with the caller's buffer: %q, %v", it.Value, err)
	}
	it.Value[0] = 'Y'
	if again, _ := s.Get(ctx(t), key("copy2")); string(again.Value) != "original" {
		t.Fatalf("value changed with a returned slice: %q", again.Value)
	}
}

func testList(t *testing.T, s state.Store) {
	for _, id := range []string{"d", "b", "e", "a", "c"} {
		mustPut(t, s, key(id), "v"+id, state.PutOptions{})
	}
	mustPut(t, s, state.Key{Kind: "thing", Owner: "bob", ID: "bb"}, "x", state.PutOptions{})
	mustPut(t, s, state.Key{Kind: "other", Owner: "alice", ID: "aa"}, "x", state.PutOptions{})
	mustPut(t, s, state.Key{Kind: "thing", Owner: "", ID: "srv"}, "x", state.PutOptions{})
	ids := func(after string, limit int) string {
		t.Helper()
		items, err := s.List(ctx(t), "thing", "alice", after, limit)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, it := range items {
			if it.Key.Kind != "thing" || it.Key.Owner != "alice" || string(it.Value) != "v"+it.Key.ID || it.Version != 1 {
				t.Fatalf("listed %+v", it)
			}
			b.WriteString(it.Key.ID)
		}
		return b.String()
	}
	for _, c := range []struct {
		after string
		limit int
		want  string
	}{{"", 0, "abcde"}, {"", 2, "ab"}, {"b", 2, "cd"}, {"d", 2, "e"}, {"e", 2, ""}, {"bb", 0, "cde"}, {"", 10, "abcde"}} {
		if got := ids(c.after, c.limit); got != c.want {
			t.Fatalf("List(after %q, limit %d) = %q; want %q", c.after, c.limit, got, c.want)
		}
	}
	for _, c := range []struct{ kind, owner, want string }{{"thing", "bob", "bb"}, {"other", "alice", "aa"}, {"thing", "", "srv"}, {"thing", "carol", ""}} {
		items, err := s.List(ctx(t), c.kind, c.owner, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, it := range items {
			got += it.Key.ID
		}
		if got != c.want {
			t.Fatalf("List(%s, %q) = %q; want %q", c.kind, c.owner, got, c.want)
		}
	}
}

func testListExpired(t *testing.T, s state.Store) {
	for i := 0; i < 6; i++ {
		ttl := time.Duration(0)
		if i%2 == 0 {
			ttl = 300 * time.Millisecond
		}
		mustPut(t, s, key(strconv.Itoa(i)), "v"+strconv.Itoa(i), state.PutOptions{TTL: ttl})
	}
	time.Sleep(700 * time.Millisecond)
	items, err := s.List(ctx(t), "thing", "alice", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Key.ID != "1" || items[1].Key.ID != "3" {
		t.Fatalf("List after expiry = %+v; want 1, 3", items)
	}
	items, err = s.List(ctx(t), "thing", "alice", "3", 0)
	if err != nil || len(items) != 1 || items[0].Key.ID != "5" {
		t.Fatalf("List after 3 = %+v, %v; want 5", items, err)
	}
}

func testLarge(t *testing.T, s state.Store) {
	big := bytes.Repeat([]byte("0123456789abcdef"), state.MaxValueSize/16)
	big[len(big)-1] = 'Z'
	if _, err := s.Put(ctx(t), key("big"), big, state.PutOptions{}); err != nil {
		t.Fatalf("put %d bytes: %v", len(big), err)
	}
	it, err := s.Get(ctx(t), key("big"))
	if err != nil || !bytes.Equal(it.Value, big) {
		t.Fatalf("get big: %d bytes, %v", len(it.Value), err)
	}
	_, err = s.Put(ctx(t), key("huge"), append(big, 'x'), state.PutOptions{})
	wantErr(t, err, state.ErrTooLarge, "put over MaxValueSize")
	if core.CodeOf(err) != core.ErrTooLarge {
		t.Fatalf("code = %v; want too_large", core.CodeOf(err))
	}
	_, err = s.Get(ctx(t), key("huge"))
	wantErr(t, err, state.ErrNotFound, "get refused value")
	_, err = s.Append(ctx(t), key("biglog"), append(big, 'x'), 0, 0)
	wantErr(t, err, state.ErrTooLarge, "append over MaxValueSize")
}

// testConcurrentCAS runs 8 goroutines incrementing one record by
// read-modify-CAS; no increment may be lost.
func testConcurrentCAS(t *testing.T, s state.Store) {
	const workers, each = 8, 15
	k := key("ctr")
	mustPut(t, s, k, "0", state.PutOptions{})
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				it, err := s.Get(context.Background(), k)
				if err != nil {
					errs <- err
					return
				}
				n, _ := strconv.Atoi(string(it.Value))
				_, err = s.Put(context.Background(), k, []byte(strconv.Itoa(n+1)), state.PutOptions{IfVersion: it.Version})
				if errors.Is(err, state.ErrConflict) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				done++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	it, err := s.Get(ctx(t), k)
	if err != nil {
		t.Fatal(err)
	}
	if string(it.Value) != strconv.Itoa(workers*each) || it.Version != workers*each+1 {
		t.Fatalf("after %d CAS increments: value %s, version %d; want %d, %d", workers*each, it.Value, it.Version, workers*each, workers*each+1)
	}
}

func appendN(t *testing.T, s state.Store, k state.Key, from, to, maxLen int, ttl time.Duration) {
	t.Helper()
	for i := from; i <= to; i++ {
		seq, err := s.Append(ctx(t), k, []byte(fmt.Sprintf("e%d", i)), maxLen, ttl)
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		if seq != int64(i) {
			t.Fatalf("append %d: seq %d", i, seq)
		}
	}
}

func seqs(t *testing.T, es []state.Entry) string {
	t.Helper()
	var b bytes.Buffer
	for _, e := range es {
		if string(e.Data) != fmt.Sprintf("e%d", e.Seq) {
			t.Fatalf("entry %d holds %q", e.Seq, e.Data)
		}
		fmt.Fprintf(&b, "%d,", e.Seq)
	}
	return b.String()
}

func rangeOf(t *testing.T, s state.Store, k state.Key, after int64, limit int) string {
	t.Helper()
	es, err := s.Range(ctx(t), k, after, limit, 0)
	if err != nil {
		t.Fatalf("range after %d: %v", after, err)
	}
	return seqs(t, es)
}

func testLogSeqs(t *testing.T, s state.Store) {
	k := key("log")
	if got := rangeOf(t, s, k, 0, 0); got != "" {
		t.Fatalf("missing log = %q; want empty", got)
	}
	appendN(t, s, k, 1, 5, 0, 0)
	if got := rangeOf(t, s, k, 0, 0); got != "1,2,3,4,5," {
		t.Fatalf("range = %q", got)
	}
	// Logs of other owners and kinds are separate, and separate from records.
	appendN(t, s, state.Key{Kind: "thing", Owner: "bob", ID: "log"}, 1, 2, 0, 0)
	appendN(t, s, state.Key{Kind: "other", Owner: "alice", ID: "log"}, 1, 1, 0, 0)
	mustPut(t, s, k, "a record", state.PutOptions{})
	appendN(t, s, k, 6, 6, 0, 0)
	if _, err := s.Add(ctx(t), k, 7, 0, 0); err != nil {
		t.Fatal(err)
	}
	if got := rangeOf(t, s, k, 4, 0); got != "5,6," {
		t.Fatalf("range after 4 = %q", got)
	}
}

func testLogTrim(t *testing.T, s state.Store) {
	k := key("trim")
	appendN(t, s, k, 1, 10, 3, 0)
	if got := rangeOf(t, s, k, 0, 0); got != "8,9,10," {
		t.Fatalf("maxLen 3 after 10 appends = %q; want 8,9,10", got)
	}
	if got := rangeOf(t, s, k, 2, 2); got != "8,9," {
		t.Fatalf("range after trimmed seq = %q; want 8,9", got)
	}
	appendN(t, s, k, 11, 12, 5, 0)
	if got := rangeOf(t, s, k, 0, 0); got != "8,9,10,11,12," {
		t.Fatalf("maxLen 5 = %q", got)
	}
	appendN(t, s, k, 13, 13, 1, 0)
	if got := rangeOf(t, s, k, 0, 0); got != "13," {
		t.Fatalf("maxLen 1 = %q", got)
	}
}

func testLogRange(t *testing.T, s state.Store) {
	k := key("win")
	appendN(t, s, k, 1, 20, 0, 0)
	for _, c := range []struct {
		after int64
		limit int
		want  string
	}{{0, 3, "1,2,3,"}, {3, 3, "4,5,6,"}, {18, 5, "19,20,"}, {20, 5, ""}, {25, 0, ""}, {17, 0, "18,19,20,"}, {-1, 1, "1,"}} {
		if got := rangeOf(t, s, k, c.after, c.limit); got != c.want {
			t.Fatalf("Range(after %d, limit %d) = %q; want %q", c.after, c.limit, got, c.want)
		}
	}
}

func testLogDelete(t *testing.T, s state.Store) {
	k := key("dl")
	appendN(t, s, k, 1, 3, 0, 0)
	if err := s.DeleteLog(ctx(t), k); err != nil {
		t.Fatal(err)
	}
	if got := rangeOf(t, s, k, 0, 0); got != "" {
		t.Fatalf("deleted log = %q", got)
	}
	if err := s.DeleteLog(ctx(t), k); err != nil {
		t.Fatalf("delete missing log: %v", err)
	}
	appendN(t, s, k, 1, 1, 0, 0) // starts over at 1
	tk := key("ttl-log")
	// Scaled: each step must land within the TTL the previous one set.
	ttl := testscale.D(time.Second)
	appendN(t, s, tk, 1, 2, 0, ttl)
	time.Sleep(ttl * 6 / 10)
	appendN(t, s, tk, 3, 3, 0, ttl) // refreshes the TTL
	time.Sleep(ttl * 6 / 10)
	if got := rangeOf(t, s, tk, 0, 0); got != "1,2,3," {
		t.Fatalf("log with a refreshed TTL = %q", got)
	}
	time.Sleep(ttl * 12 / 10)
	if got := rangeOf(t, s, tk, 0, 0); got != "" {
		t.Fatalf("expired log = %q", got)
	}
	appendN(t, s, tk, 1, 1, 0, 0)
}

func testLogWait(t *testing.T, s state.Store) {
	k := key("wait")
	appendN(t, s, k, 1, 2, 0, 0)
	type res struct {
		es  []state.Entry
		err error
		at  time.Time
	}
	got := make(chan res, 1)
	go func() {
		es, err := s.Range(context.Background(), k, 2, 10, testscale.D(10*time.Second))
		got <- res{es, err, time.Now()}
	}()
	time.Sleep(300 * time.Millisecond)
	// An append elsewhere does not end the wait with nothing.
	if _, err := s.Append(ctx(t), key("elsewhere"), []byte("x"), 0, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	select {
	case r := <-got:
		t.Fatalf("Range returned %v, %v before its log was appended to", r.es, r.err)
	default:
	}
	sent := time.Now()
	go func() { _, _ = s.Append(context.Background(), k, []byte("e3"), 0, 0) }()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if s := seqs(t, r.es); s != "3," {
			t.Fatalf("woken Range = %q; want 3", s)
		}
		if d := r.at.Sub(sent); d > testscale.D(3*time.Second) {
			t.Fatalf("woken %v after the append", d)
		}
	case <-time.After(testscale.D(8 * time.Second)):
		t.Fatal("Range was not woken by the append")
	}
	// Entries already there return at once despite wait.
	start := time.Now()
	es, err := s.Range(ctx(t), k, 0, 2, 10*time.Second)
	if err != nil || seqs(t, es) != "1,2," || time.Since(start) > testscale.D(3*time.Second) {
		t.Fatalf("Range with entries waiting: %v, %v after %v", es, err, time.Since(start))
	}
}

func testLogWaitTimeout(t *testing.T, s state.Store) {
	k := key("quiet")
	appendN(t, s, k, 1, 1, 0, 0)
	start := time.Now()
	es, err := s.Range(ctx(t), k, 1, 0, 300*time.Millisecond)
	d := time.Since(start)
	if err != nil || len(es) != 0 {
		t.Fatalf("Range on a quiet log = %v, %v; want empty, no error", es, err)
	}
	if d < 250*time.Millisecond || d > testscale.D(5*time.Second) {
		t.Fatalf("Range waited %v; want about 300ms", d)
	}
	// A log that does not exist yet waits too.
	start = time.Now()
	if es, err := s.Range(ctx(t), key("none"), 0, 0, 200*time.Millisecond); err != nil || len(es) != 0 || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("Range on a missing log = %v, %v after %v", es, err, time.Since(start))
	}
}

func testLogWaitCancel(t *testing.T, s state.Store) {
	c, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.Range(c, key("cancel"), 0, 0, 20*time.Second)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		wantErr(t, err, context.Canceled, "cancelled Range")
	case <-time.After(testscale.D(3 * time.Second)):
		t.Fatal("Range did not return after its context was cancelled")
	}
}

func testCounterLimit(t *testing.T, s state.Store) {
	k := key("quota")
	add := func(delta, limit, want int64, wantErr error) {
		t.Helper()
		v, err := s.Add(ctx(t), k, delta, limit, 0)
		if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
			t.Fatalf("Add(%d, limit %d): err %v; want %v", delta, limit, err, wantErr)
		}
		if v != want {
			t.Fatalf("Add(%d, limit %d) = %d; want %d", delta, limit, v, want)
		}
	}
	add(3, 5, 3, nil)
	add(3, 5, 3, state.ErrLimit) // refused, unchanged
	add(2, 5, 5, nil)            // exactly at the limit
	add(1, 5, 5, state.ErrLimit)
	_, err := s.Add(ctx(t), k, 1, 5, 0)
	if core.CodeOf(err) != core.ErrQuota {
		t.Fatalf("limit code = %v; want quota", core.CodeOf(err))
	}
	add(-1, 3, 4, nil) // decreases are never refused
	add(10, 0, 14, nil)
	add(-14, 0, 0, nil) // removed at 0
	add(1, 1, 1, nil)   // starts again from 0
	add(-5, 0, -4, nil) // below 0: removed too
	add(2, 0, 2, nil)
	// Counters are separate per owner and kind.
	if v, err := s.Add(ctx(t), state.Key{Kind: "thing", Owner: "bob", ID: "quota"}, 1, 1, 0); err != nil || v != 1 {
		t.Fatalf("bob's counter = %d, %v", v, err)
	}
}

func testCounterTTL(t *testing.T, s state.Store) {
	k := key("window")
	// Scaled: each step must land within the TTL the previous one set.
	ttl := testscale.D(time.Second)
	if _, err := s.Add(ctx(t), k, 2, 0, ttl); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl * 6 / 10)
	if v, err := s.Add(ctx(t), k, 1, 0, ttl); err != nil || v != 3 {
		t.Fatalf("Add within TTL = %d, %v; want 3", v, err)
	}
	time.Sleep(ttl * 6 / 10) // refreshed: still there
	if v, err := s.Add(ctx(t), k, 1, 0, 0); err != nil || v != 4 {
		t.Fatalf("Add after refresh = %d, %v; want 4", v, err)
	}
	time.Sleep(ttl * 12 / 10)
	if v, err := s.Add(ctx(t), k, 1, 0, 0); err != nil || v != 1 {
		t.Fatalf("Add after expiry = %d, %v; want 1", v, err)
	}
}

func testCounterConcurrent(t *testing.T, s state.Store) {
	const workers, each, limit = 8, 10, 50
	k := key("slots")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				_, err := s.Add(context.Background(), k, 1, limit, 0)
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case errors.Is(err, state.ErrLimit):
					refused++
				default:
					t.Error(err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != limit || refused != workers*each-limit {
		t.Fatalf("%d adds accepted, %d refused; want %d, %d", ok, refused, limit, workers*each-limit)
	}
	if v, err := s.Add(ctx(t), k, 0, 0, 0); err != nil || v != limit {
		t.Fatalf("counter = %d, %v; want %d", v, err, limit)
	}
}

func testPingClose(t *testing.T, s state.Store) {
	if err := s.Ping(ctx(t)); err != nil {
		t.Fatalf("ping: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	_, err := s.Put(ctx(t), key("late"), []byte("x"), state.PutOptions{})
	wantErr(t, err, state.ErrUnavailable, "put after close")
	wantErr(t, s.Ping(ctx(t)), state.ErrUnavailable, "ping after close")
}
