package state_test

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/state"
	"github.com/airlock-dev/airlock/state/statetest"
)

func openBolt(t *testing.T, path string) *state.Bolt {
	t.Helper()
	b, err := state.OpenBolt(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// openCrashCopy opens a copy of b's file as it is on disk now: what a
// kill -9 at this moment would leave (nothing not yet committed).
func openCrashCopy(t *testing.T, b *state.Bolt) *state.Bolt {
	t.Helper()
	crash := filepath.Join(t.TempDir(), "crash.db")
	raw, err := os.ReadFile(b.Path())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crash, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return openBolt(t, crash)
}

func TestBoltContract(t *testing.T) {
	t.Parallel()
	statetest.Run(t, func(t *testing.T) state.Store { return openBolt(t, t.TempDir()) })
}

func bctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), testscale.D(20*time.Second))
	t.Cleanup(cancel)
	return c
}

// TestBoltSurvivesReopen closes the store and opens the file again: records
// (with versions and TTLs), logs and counters are all still there.
func TestBoltSurvivesReopen(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "nested", "data")
	path := filepath.Join(dir, "airlock.db")
	b := openBolt(t, path)
	k := state.Key{Kind: "run", Owner: "alice", ID: "r1"}
	for i := 0; i < 3; i++ {
		if _, err := b.Put(bctx(t), k, []byte{byte('a' + i)}, state.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Put(bctx(t), state.Key{Kind: "run", Owner: "alice", ID: "r2"}, []byte("x"), state.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if _, err := b.Append(bctx(t), k, []byte("ev"), 3, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Add(bctx(t), k, 7, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b = openBolt(t, path)
	defer b.Close()
	it, err := b.Get(bctx(t), k)
	if err != nil || string(it.Value) != "c" || it.Version != 3 {
		t.Fatalf("after reopen: %+v, %v; want c at version 3", it, err)
	}
	items, err := b.List(bctx(t), "run", "alice", "", 0)
	if err != nil || len(items) != 2 || items[1].Expires.IsZero() {
		t.Fatalf("list after reopen = %+v, %v", items, err)
	}
	es, err := b.Range(bctx(t), k, 0, 0, 0)
	if err != nil || len(es) != 3 || es[0].Seq != 2 || es[2].Seq != 4 {
		t.Fatalf("log after reopen = %+v, %v; want seqs 2..4", es, err)
	}
	if seq, err := b.Append(bctx(t), k, []byte("ev"), 3, 0); err != nil || seq != 5 {
		t.Fatalf("append after reopen = %d, %v; want 5", seq, err)
	}
	if v, err := b.Add(bctx(t), k, 1, 0, 0); err != nil || v != 8 {
		t.Fatalf("counter after reopen = %d, %v; want 8", v, err)
	}
	// A directory path means the default file inside it.
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}

func TestBoltDirectoryPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b := openBolt(t, dir)
	defer b.Close()
	if want := filepath.Join(dir, state.BoltFile); b.Path() != want {
		t.Fatalf("path = %s; want %s", b.Path(), want)
	}
}

// TestBoltSweep checks that Sweep deletes expired entries from the file
// and leaves live ones.
func TestBoltSweep(t *testing.T) {
	t.Parallel()
	b, err := state.OpenBoltWith(t.TempDir(), state.BoltOptions{SweepEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	k := func(id string) state.Key { return state.Key{Kind: "s", Owner: "o", ID: id} }
	for _, id := range []string{"a", "b", "c"} {
		if _, err := b.Put(bctx(t), k(id), []byte(id), state.PutOptions{TTL: 100 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	// b is rewritten without TTL: its old expiry must not sweep it.
	if _, err := b.Put(bctx(t), k("b"), []byte("b2"), state.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(bctx(t), k("log"), []byte("x"), 0, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add(bctx(t), k("ctr"), 1, 0, 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(bctx(t), k("d"), []byte("d"), state.PutOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond)
	n, err := b.Sweep()
	if err != nil || n != 4 {
		t.Fatalf("sweep = %d, %v; want 4 (a, c, log, ctr)", n, err)
	}
	if n, err := b.Sweep(); err != nil || n != 0 {
		t.Fatalf("second sweep = %d, %v; want 0", n, err)
	}
	items, err := b.List(bctx(t), "s", "o", "", 0)
	if err != nil || len(items) != 2 || items[0].Key.ID != "b" || items[1].Key.ID != "d" {
		t.Fatalf("after sweep: %+v, %v; want b, d", items, err)
	}
}

// TestBoltLockedByAnotherProcess opens the store here and then in a child
// process (this test binary): the child fails within a few seconds with an
// error naming the file.
func TestBoltLockedByAnotherProcess(t *testing.T) {
	if p := os.Getenv("STATE_TEST_BOLT_CHILD"); p != "" {
		start := time.Now()
		_, err := state.OpenBolt(p)
		if err == nil {
			os.Stdout.WriteString("CHILD opened the locked store\n")
			os.Exit(3)
		}
		os.Stdout.WriteString("CHILD " + time.Since(start).Round(time.Millisecond).String() + " " + err.Error() + "\n")
		if !errors.Is(err, state.ErrUnavailable) {
			os.Exit(4)
		}
		os.Exit(0)
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "locked.db")
	b := openBolt(t, path)
	defer b.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoltLockedByAnotherProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STATE_TEST_BOLT_CHILD="+path)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), path) || !strings.Contains(string(out), "locked by another process") {
		t.Fatalf("child's error does not name the path and the lock:\n%s", out)
	}
	if took > testscale.D(10*time.Second) {
		t.Fatalf("child took %v to fail", took)
	}
	t.Logf("second process: %s", strings.TrimSpace(string(out)))
}

// TestBoltCloseWakesRange checks that Close ends a waiting Range with
// ErrUnavailable instead of leaving it until its wait runs out.
func TestBoltCloseWakesRange(t *testing.T) {
	t.Parallel()
	b := openBolt(t, t.TempDir())
	done := make(chan error, 1)
	go func() {
		_, err := b.Range(context.Background(), state.Key{Kind: "run", ID: "r"}, 0, 0, time.Minute)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, state.ErrUnavailable) {
			t.Fatalf("Range after Close = %v; want ErrUnavailable", err)
		}
	case <-time.After(testscale.D(5 * time.Second)):
		t.Fatal("Close did not wake the waiting Range")
	}
}

// TestBoltKill9 kills a child process (this test binary) with SIGKILL
// while it appends and writes records as fast as it can, then opens the
// file: it opens at once (the lock died with the process), and what is
// there is consistent: a dense log from 1, and the record's version equal
// to its value (both written in one transaction).
func TestBoltKill9(t *testing.T) {
	if p := os.Getenv("STATE_TEST_BOLT_WRITER"); p != "" {
		b, err := state.OpenBolt(p)
		if err != nil {
			os.Exit(5)
		}
		k := state.Key{Kind: "run", Owner: "alice", ID: "r"}
		for i := int64(1); ; i++ {
			if _, err := b.Append(context.Background(), k, []byte("ev"), 0, 0); err != nil {
				os.Exit(6)
			}
			cond := i - 1
			if i == 1 {
				cond = -1 // create
			}
			if _, err := b.Put(context.Background(), k, []byte(strconv.FormatInt(i, 10)), state.PutOptions{IfVersion: cond}); err != nil {
				os.Exit(7)
			}
			if i == 20 {
				os.Stdout.WriteString("READY\n")
			}
		}
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kill.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoltKill9$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STATE_TEST_BOLT_WRITER="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "READY\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("writer did not start: %q, %v", buf, err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	start := time.Now()
	b := openBolt(t, path)
	defer b.Close()
	// Not scaled: it must stay under the ~1 s a store still locked would
	// take to refuse (the lock died with the process).
	if d := time.Since(start); d > 900*time.Millisecond {
		t.Fatalf("reopen after kill -9 took %v", d)
	}
	k := state.Key{Kind: "run", Owner: "alice", ID: "r"}
	es, err := b.Range(bctx(t), k, 0, 0, 0)
	if err != nil || len(es) < 20 {
		t.Fatalf("log after kill -9: %d entries, %v", len(es), err)
	}
	for i, e := range es {
		if e.Seq != int64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}
	it, err := b.Get(bctx(t), k)
	if err != nil || string(it.Value) != strconv.FormatInt(it.Version, 10) {
		t.Fatalf("record after kill -9: %+v, %v", it, err)
	}
	if n := int64(len(es)); it.Version != n && it.Version != n-1 {
		t.Fatalf("record version %d with %d log entries", it.Version, n)
	}
	t.Logf("after kill -9: %d log entries, record version %d", len(es), it.Version)
}
