package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/wire"
)

// serveUnderTest is one running `airlock serve` of section 14: its
// binary's label, base URL, a client per owner and one open session.
type serveUnderTest struct {
	label   string
	base    string
	srv     *server
	clients []*client.Client
	session string
}

// startServeUnderTest starts bin as `make run` would run it, but with
// section 6's four keys: the in-process queue, the embedded (Bolt) state
// store in a fresh data directory, the keeper (call log, automatic
// snapshots); it opens a session of the first owner and warms it.
func startServeUnderTest(ctx context.Context, o options, label, bin string, idx int, extra ...string) (*serveUnderTest, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(o.workdir, "serve-"+strconv.Itoa(idx)+"-")
	if err != nil {
		return nil, err
	}
	keys := filepath.Join(dir, "keys")
	if err := os.WriteFile(keys, []byte(strings.Join(ownerKeys, "\n")+"\n"), 0o600); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{bin, "serve", "--keys-file", keys, "--rate", "-1", "--concurrency", "4", "--python-image", o.pythonImg,
		"--addr", addr, "--data-dir", filepath.Join(dir, "data")}
	args = append(args, extra...)
	env := childEnv()
	if p := os.Getenv("BENCH_PPROF_" + strconv.Itoa(idx)); p != "" { // e.g. BENCH_PPROF_0=127.0.0.1:6060
		env = append(env, "AIRLOCK_PPROF="+p)
	}
	srv, err := startServer(filepath.Join(dir, "serve.log"), env, args...)
	if err != nil {
		return nil, err
	}
	s := &serveUnderTest{label: label, base: "http://" + addr, srv: srv}
	if err := waitHTTP(ctx, srv, s.base+"/readyz", time.Minute); err != nil {
		srv.stop(10 * time.Second)
		return nil, err
	}
	for _, k := range ownerKeys {
		c, err := client.New(s.base, client.WithAPIKey(k))
		if err != nil {
			return nil, err
		}
		s.clients = append(s.clients, c)
	}
	sess, err := s.clients[0].CreateSession(ctx, nil)
	if err != nil {
		srv.stop(10 * time.Second)
		return nil, fmt.Errorf("%s: open session: %w", label, err)
	}
	s.session = sess.ID
	if err := s.sessionCall(ctx); err != nil {
		srv.stop(10 * time.Second)
		return nil, fmt.Errorf("%s: warm-up call: %w", label, err)
	}
	return s, nil
}

// sessionCall runs print(1) in the session and checks the answer.
func (s *serveUnderTest) sessionCall(ctx context.Context) error {
	return checkPrint(s.clients[0].CallSessionTool(ctx, s.session, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}}))
}

// oneShot runs print(1) as a one-shot call of owner i.
func (s *serveUnderTest) oneShot(i int) func(context.Context) error {
	return func(ctx context.Context) error {
		return checkPrint(s.clients[i].CallTool(ctx, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}}))
	}
}

// checkPrint accepts a print(1) answer.
func checkPrint(res *wire.ToolCallResponse, err error) error {
	if err != nil {
		return err
	}
	if res.Result.Status != "ok" || res.Result.Stdout != "1\n" {
		return fmt.Errorf("status %s stdout %q stderr %q", res.Result.Status, res.Result.Stdout, res.Result.Stderr)
	}
	return nil
}

// sectionServe is issue 33's side-by-side bench of whole servers: the
// binary under test (-airlock) and, when BENCH_AIRLOCK_BASE names one, a
// baseline binary (else the binary under test again with
// --session-autosnapshot-quiet), each a real `airlock serve` with the embedded store
// (make run's wiring, the keeper included, which section 9's in-process
// servers leave out), driven alternately in one run: a session's print(1)
// at an agent's pace (100 ms apart) and back to back, and four owners'
// one-shot print(1) at a call a second each.
func sectionServe(ctx context.Context, o options, q *quieter, rep *report) error {
	type binary struct {
		label, bin string
		args       []string
	}
	bins := []binary{{"under test", o.airlock, nil}}
	if b := os.Getenv("BENCH_AIRLOCK_BASE"); b != "" {
		bins = append([]binary{{"base", b, nil}}, bins...)
	} else {
		// Without a baseline: the binary under test again, its automatic
		// snapshots after a quiet time instead of right after each call.
		q := "--session-autosnapshot-quiet=" + autosnapQuiet.String()
		bins = append(bins, binary{"under test, " + q, o.airlock, []string{q}})
	}
	var sut []*serveUnderTest
	for i, b := range bins {
		s, err := startServeUnderTest(ctx, o, b.label+" ("+b.bin+")", b.bin, i, b.args...)
		if err != nil {
			return err
		}
		defer s.srv.stop(30 * time.Second)
		sut = append(sut, s)
	}
	if err := q.wait(ctx); err != nil { // lets the generic pools fill
		return err
	}
	t := &table{title: "14. Whole servers side by side — real `airlock serve` with the embedded store, alternating between binaries",
		head: []string{"load", "binary", "calls", "p50", "p95", "p99", "max", "server CPU per call", "failed"}}
	cpu := func() []time.Duration {
		out := make([]time.Duration, len(sut))
		for i, s := range sut {
			out[i], _ = procCPU(s.srv.pid())
		}
		return out
	}
	cpu0 := cpu()
	row := func(load string, ss []*series) {
		cpu1 := cpu()
		for i, s := range ss {
			per := "—"
			if n := len(s.d) + s.failed; n > 0 {
				per = ms((cpu1[i] - cpu0[i]) / time.Duration(n))
			}
			t.row(load, s.name, strconv.Itoa(len(s.d)), ms(s.pct(50)), ms(s.pct(95)), ms(s.pct(99)), ms(s.max()), per, s.failures())
		}
		cpu0 = cpu1
		if len(ss) == 2 {
			t.note("%s: p50 %s → %s (%s), p99 %s → %s (%s).", load, ms(ss[0].pct(50)), ms(ss[1].pct(50)), ratio(ss[0].pct(50), ss[1].pct(50)),
				ms(ss[0].pct(99)), ms(ss[1].pct(99)), ratio(ss[0].pct(99), ss[1].pct(99)))
		}
	}
	mk := func() []*series {
		out := make([]*series, len(sut))
		for i, s := range sut {
			out[i] = &series{name: s.label}
		}
		return out
	}

	// a. Session print(1), 100 ms apart, servers alternating call by call.
	rounds := 6 * o.n
	logf("section 14: session print(1) at 100 ms pace, %d rounds per server", rounds)
	paced := mk()
	vs := make([]*variant, len(sut))
	for i, s := range sut {
		vs[i] = &variant{s: paced[i], run: s.sessionCall}
	}
	pause := func(ctx context.Context) error { sleepCtx(ctx, 100*time.Millisecond); return ctx.Err() }
	if err := interleave(ctx, q, rounds, vs, pause); err != nil {
		return err
	}
	row("session print(1), 100 ms apart", paced)
	rep.figureMS("serve: session print(1), 100 ms apart, p50", paced[len(paced)-1].pct(50))
	rep.figureMS("serve: session print(1), 100 ms apart, p99", paced[len(paced)-1].pct(99))

	// b. Session print(1) back to back, in blocks of 20 per server.
	logf("section 14: session print(1) back to back, %d calls per server", 200)
	bb := mk()
	for blk := 0; blk < 10 && ctx.Err() == nil; blk++ {
		for k := range sut {
			i := (blk + k) % len(sut)
			for c := 0; c < 20; c++ {
				measure(ctx, bb[i], sut[i].sessionCall)
			}
		}
	}
	row("session print(1), back to back", bb)

	// c. Four owners, one-shot print(1), one call a second each (a call
	// every 250 ms), servers alternating round by round.
	if err := q.wait(ctx); err != nil {
		return err
	}
	cpu0 = cpu()
	logf("section 14: 4 owners one-shot print(1) at 1 call/s each, %d rounds per server", o.n)
	owners := mk()
	for r := 0; r < o.n && ctx.Err() == nil; r++ {
		for k := range sut {
			i := (r + k) % len(sut)
			tick := time.Now()
			for c := range ownerKeys {
				measure(ctx, owners[i], sut[i].oneShot(c))
				sleepCtx(ctx, time.Until(tick.Add(time.Duration(c+1)*250*time.Millisecond)))
			}
		}
	}
	row("4 owners one-shot print(1), 1 call/s each (all owners pooled)", owners)
	t.note("Each server is `airlock serve --keys-file (4 keys) --rate -1 --concurrency 4 --data-dir (fresh)`: the in-process queue and worker and the embedded Bolt store, so the keeper's call log and automatic snapshot after each session call are in the path, as with `make run`. Base: BENCH_AIRLOCK_BASE; under test: BENCH_AIRLOCK; without a base, the binary under test runs a second time with --session-autosnapshot-quiet (its automatic snapshot once the session has had no call end for that long, so back-to-back calls never wait for one; a kill -9 then loses more: README). Both run at once on the same machine, so both see the same background load; the machine is not waited quiet between calls. Server CPU per call: utime+stime of the serve process (its embedded worker, pool refills and automatic snapshots included; containers and dockerd not) over the load, divided by its calls.")
	rep.table(t)
	return nil
}
