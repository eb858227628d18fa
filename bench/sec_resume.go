package main

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/queue"
)

// resumeNamespaces are the sessions the resume bench holds: a small
// namespace and a ~10 MiB DataFrame.
var resumeNamespaces = []struct{ name, code string }{
	{"small namespace (ints, a dict, a lambda, a 100-row frame)", "import pandas as pd\nx = 1\nd = {'a': [1, 2, 3]}\nsq = lambda v: v * v\ndf = pd.DataFrame({'a': range(100)})"},
	{"~10 MiB DataFrame (1.3M float64 rows)", "import numpy as np, pandas as pd\nx = 1\ndf = pd.DataFrame({'v': np.random.rand(1_300_000)})"},
}

// autosnapQuiet is the --session-autosnapshot-quiet sections 13b and 14
// compare with serve's default (0: right after each call).
const autosnapQuiet = 50 * time.Millisecond

// sectionResume is issue 30's second bench: the wake latency of a
// hibernated session (through the jobs client and an in-process queue, as
// the API's call sees it: a fresh container, the snapshot restored, the
// call run), and the cost automatic snapshots after each call add to a
// session call, against the same calls without them, side by side on
// one engine and the embedded (Bolt) state store.
func sectionResume(ctx context.Context, o options, q *quieter, rep *report) error {
	eng, st, done, err := engineWithStore(ctx, o, "resume-")
	if err != nil {
		return err
	}
	defer done()
	store := snapshots.New(st, snapshots.DefaultConfig(), nil)
	resumes := snapshots.NewResumes(st, store)
	keeper := func(auto int64, quiet time.Duration) *snapshots.Keeper {
		k := snapshots.NewKeeper(eng, store, snapshots.NewCallLog(st), nil)
		k.EnableResume(snapshots.ResumeConfig{Resumes: resumes, AutoMaxBytes: auto, AutoQuiet: quiet})
		return k
	}
	// auto saves right after each call (serve's default), calm once the
	// session has been quiet for autosnapQuiet.
	plain, auto, calm := keeper(0, 0), keeper(64<<20, 0), keeper(64<<20, autosnapQuiet)
	mq, err := queue.NewMemory(queue.Config{}, queue.Deps{})
	if err != nil {
		return err
	}
	defer mq.Close()
	w, err := mq.NewWorker(queue.WorkerConfig{Concurrency: 2}, jobs.NewRunner(plain))
	if err != nil {
		return err
	}
	wctx, stopW := context.WithCancel(ctx)
	wdone := make(chan struct{})
	go func() { defer close(wdone); _ = w.Run(wctx) }()
	defer func() { stopW(); <-wdone }()
	client := jobs.NewClient(mq, jobs.ClientConfig{})
	client.SetResumes(resumes)
	lim := core.Limits{Memory: 1 << 30, Timeout: 2 * time.Minute}
	exec := func(id, code string) (core.Result, error) {
		res, err := client.Exec(ctx, core.Request{Owner: "bench", SessionID: id, Code: code, Limits: core.Limits{Timeout: 2 * time.Minute}})
		if err == nil && res.Status != core.StatusOK {
			err = fmt.Errorf("%s: %s %s", res.Status, res.Message, res.Stderr)
		}
		return res, err
	}

	const wakeRounds = 5
	t := &table{title: "13. Sessions that outlive their container — wake of a hibernated session, and automatic snapshots after each call",
		head: []string{"session", "call on a live session p50", "call that wakes it p50", "of it the wake p50", "wake max"}}
	for _, c := range resumeNamespaces {
		live, woken, wake := &series{}, &series{}, &series{}
		for range wakeRounds {
			id, err := client.OpenSession(ctx, "bench", lim)
			if err != nil {
				return err
			}
			if _, err := exec(id, c.code); err != nil {
				return fmt.Errorf("set up %s: %w", c.name, err)
			}
			_ = q.wait(ctx)
			t0 := time.Now()
			if _, err := exec(id, "print(x)"); err != nil {
				return err
			}
			live.add(time.Since(t0))
			if ok, err := plain.Hibernate(ctx, "bench", id, true); err != nil || !ok {
				return fmt.Errorf("hibernate %s: %v", c.name, err)
			}
			_ = q.wait(ctx)
			t0 = time.Now()
			res, err := exec(id, "print(x)")
			if err != nil {
				return err
			}
			if !res.Resumed {
				return fmt.Errorf("%s: the call after hibernation did not wake the session", c.name)
			}
			woken.add(time.Since(t0))
			wake.add(time.Duration(res.WakeMS) * time.Millisecond)
			_ = client.CloseSession(ctx, "bench", id)
		}
		t.row(c.name, ms(live.pct(50)), ms(woken.pct(50)), ms(wake.pct(50)), ms(wake.max()))
		rep.figureMS("wake of a hibernated session, "+c.name+" (p50)", wake.pct(50))
	}
	t.note("A session hibernated (namespace and /work saved into the state store, container removed), then called: the jobs client finds it gone, restores it into a fresh container (no warm pool: a container start is part of it) and runs the call. %d rounds each.", wakeRounds)
	rep.table(t)

	// Automatic snapshots: the same calls on three sessions, one whose
	// worker saves it right after each call, one whose worker saves it
	// once it has been quiet for autosnapQuiet, and one whose worker
	// does not, in alternating blocks; back to back, 1 ms apart (a
	// client's turnaround: right after each call, the next call waits for
	// the snapshot the last one started) and at an agent's pace (1 s
	// apart), calls and pacedCalls per session.
	const calls, pacedCalls = 40, 12
	t2 := &table{title: "13b. Cost of the automatic snapshot after each session call (--session-autosnapshot-max-bytes)",
		head: []string{"session", "pace", "call p50 without", "with, right after each call", "added p50", "with, after " + autosnapQuiet.String() + " quiet", "added p50", "call max without", "max right after", "max after quiet"}}
	t3 := &table{title: "13c. The automatic snapshot itself, off the caller's path",
		head: []string{"session", "stored size", "snapshot p50", "snapshot max"}}
	for _, c := range resumeNamespaces {
		ids := map[*snapshots.Keeper]string{}
		for _, k := range []*snapshots.Keeper{plain, auto, calm} {
			res, err := k.Handle(ctx, core.Request{Op: core.OpSessionOpen, Owner: "bench", Limits: lim})
			if err != nil {
				return err
			}
			ids[k] = res.SessionID
			if r, err := k.Handle(ctx, core.Request{Owner: "bench", SessionID: res.SessionID, Code: c.code, Limits: core.Limits{Timeout: 2 * time.Minute}}); err != nil || r.Status != core.StatusOK {
				return fmt.Errorf("set up %s: %v %s", c.name, err, r.Stderr)
			}
		}
		auto.WaitAutosnapshots()
		calm.WaitAutosnapshots()
		// The snapshot itself, off the caller's path: a call, then the
		// time until its snapshot is stored.
		snap := &series{}
		var bytes int64
		for range 3 {
			_ = q.wait(ctx)
			if r, err := auto.Handle(ctx, core.Request{Owner: "bench", SessionID: ids[auto], Code: "x += 1", Limits: core.Limits{Timeout: 2 * time.Minute}}); err != nil || r.Status != core.StatusOK {
				return fmt.Errorf("call: %v %s", err, r.Stderr)
			}
			t0 := time.Now()
			auto.WaitAutosnapshots()
			snap.add(time.Since(t0))
			r, err := resumes.Get(ctx, "bench", ids[auto])
			if err != nil {
				return fmt.Errorf("%s: no automatic snapshot after a call: %w", c.name, err)
			}
			m, err := store.Get(ctx, "bench", r.Snapshot)
			if err != nil {
				return err
			}
			bytes = m.Bytes
		}
		t3.row(c.name, fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20)), ms(snap.pct(50)), ms(snap.max()))
		for _, pace := range []time.Duration{0, time.Millisecond, time.Second} {
			without, with, quiet := &series{}, &series{}, &series{}
			for block := range 6 {
				k, s := plain, without
				switch block % 3 {
				case 1:
					k, s = auto, with
				case 2:
					k, s = calm, quiet
				}
				_ = q.wait(ctx)
				n := calls
				if pace >= time.Second {
					n = pacedCalls
				}
				for range n / 2 {
					t0 := time.Now()
					r, err := k.Handle(ctx, core.Request{Owner: "bench", SessionID: ids[k], Code: "x += 1", Limits: core.Limits{Timeout: 2 * time.Minute}})
					if err != nil || r.Status != core.StatusOK {
						return fmt.Errorf("call: %v %s", err, r.Stderr)
					}
					s.add(time.Since(t0))
					time.Sleep(pace)
				}
				k.WaitAutosnapshots()
			}
			name := "back to back"
			if pace > 0 {
				name = fmt.Sprintf("%s apart", pace)
			}
			t2.row(c.name, name, ms(without.pct(50)), ms(with.pct(50)), ms(with.pct(50)-without.pct(50)),
				ms(quiet.pct(50)), ms(quiet.pct(50)-without.pct(50)), ms(without.max()), ms(with.max()), ms(quiet.max()))
			if pace == time.Millisecond {
				rep.figureMS("autosnapshot cost per session call 1 ms after the last (default: right after each call), "+c.name+" (p50)", with.pct(50)-without.pct(50))
				rep.figureMS("autosnapshot cost per session call 1 ms after the last, --session-autosnapshot-quiet "+autosnapQuiet.String()+", "+c.name+" (p50)", quiet.pct(50)-without.pct(50))
			}
		}
		for k, id := range ids {
			_, _ = k.Handle(ctx, core.Request{Op: core.OpSessionClose, Owner: "bench", SessionID: id})
		}
	}
	t3.note("After a call that ran, the worker saves the session (same path as a user's snapshot, into the state store) while the caller already has its answer; the time from the call's answer to the snapshot stored.")
	rep.table(t3)
	t2.note("Each call `x += 1` on the worker's Keeper. With automatic snapshots the session is saved after each call off the caller's path. Right after each call (serve's default, --session-autosnapshot-quiet 0), a call that follows at once waits for that snapshot and calls arriving meanwhile coalesce into one more; after %s quiet (--session-autosnapshot-quiet), calls back to back never wait for one (the burst is saved once, after it, or %s after its first unsaved call) and a session whose next call comes %s or more after the last is saved before that call. Back to back at this level (the next call a few microseconds after the answer) the next call usually starts before the snapshot does; 1 ms apart is a client's turnaround through HTTP, when a snapshot right after each call has started. At an agent's pace the snapshot is done before the next call either way. %d calls back to back and 1 ms apart, %d 1 s apart, per session, in alternating blocks.", autosnapQuiet, "5s", autosnapQuiet, calls, pacedCalls)
	rep.table(t2)
	return nil
}
