package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/bench/loadtest"
)

// sectionExec is issue 2's bench: print(1) through `airlock exec` (one
// process per call) against `docker run --rm`, and the peak RSS of a
// long-lived airlock process over a loop of calls.
func sectionExec(ctx context.Context, o options, q *quieter, rep *report) error {
	env := childEnv()
	code := "print(1)"
	mk := func(name string, argv []string) *variant {
		v := &variant{s: &series{name: name}}
		v.run = func(ctx context.Context) error {
			_, rss, err := timedRun(ctx, env, "1\n", argv...)
			v.peak = max(v.peak, rss)
			return err
		}
		return v
	}
	cli := mk("`airlock exec run_python 'print(1)'` (process per call, cold container)", []string{o.airlock, "exec", "run_python", code})
	docker := mk("`docker run --rm --network none` python3 -c 'print(1)'", dockerRun(o.pythonImg, code))
	hard := mk("`docker run --rm` with Airlock's limits (read-only, caps, tmpfs, init, ulimits…)", dockerRunHardened(o.pythonImg, code))
	vs := []*variant{cli, docker, hard}
	for _, v := range vs { // warm caches; not measured
		if err := v.run(ctx); err != nil {
			return fmt.Errorf("warm-up %s: %w", v.s.name, err)
		}
		v.peak = 0
	}
	quiet := func(ctx context.Context) error { return q.wait(ctx) }
	logf("section 1: %d interleaved rounds of %d variants", o.n, len(vs))
	if err := interleave(ctx, q, o.n, vs, quiet); err != nil {
		return err
	}
	loop, rss, err := rssLoop(ctx, o, q)
	if err != nil {
		return err
	}
	t := &table{title: fmt.Sprintf("1. Sandbox engine — print(1), N=%d per variant, interleaved", o.n),
		head: []string{"variant", "n", "failed", "p50", "p95", "max", "docker run ÷ variant, p50", "p95", "peak RSS"}}
	base := docker.s
	for _, v := range vs {
		t.row(v.s.name, strconv.Itoa(len(v.s.d)), v.s.failures(), ms(v.s.pct(50)), ms(v.s.pct(95)), ms(v.s.max()),
			ratio(base.pct(50), v.s.pct(50)), ratio(base.pct(95), v.s.pct(95)), mib(v.peak)+" (client process)")
	}
	t.row(loop.name, strconv.Itoa(len(loop.d)), loop.failures(), ms(loop.pct(50)), ms(loop.pct(95)), ms(loop.max()),
		ratio(base.pct(50), loop.pct(50)), ratio(base.pct(95), loop.pct(95)), mib(rss.hwm)+" (VmHWM)")
	t.note("Airlock's CLI overhead over plain `docker run --rm`: %s p50 (%s p50 over the hardened run).",
		signedMS(cli.s.pct(50)-base.pct(50)), signedMS(cli.s.pct(50)-hard.s.pct(50)))
	t.note("Long-lived airlock (`airlock serve --pool 0`, in-process queue) over %d sequential calls: RSS %s before the loop, %s after, highest sampled every 20 ms %s, VmHWM (peak since start) %s.",
		o.loop, mib(rss.before), mib(rss.after), mib(rss.peakSampled), mib(rss.hwm))
	t.note("Client-process peak RSS is the rusage maxrss of the `airlock exec` / `docker` CLI process (the largest of its runs).")
	rep.table(t)
	return nil
}

// rssLoop starts `airlock serve --pool 0` and sends it o.loop sequential
// print(1) tool calls while sampling its RSS.
func rssLoop(ctx context.Context, o options, q *quieter) (*series, rssReading, error) {
	port, err := freePort()
	if err != nil {
		return nil, rssReading{}, err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	srv, err := startServer(filepath.Join(o.workdir, "serve-rss.log"), childEnv(),
		o.airlock, "serve", "--insecure-local", "--rate", "-1", "--pool", "0", "--addr", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, rssReading{}, err
	}
	defer srv.stop(30 * time.Second)
	if err := waitHTTP(ctx, srv, base+"/readyz", time.Minute); err != nil {
		return nil, rssReading{}, err
	}
	if err := q.wait(ctx); err != nil {
		return nil, rssReading{}, err
	}
	logf("section 1: %d sequential POST /v1/tool-calls to airlock serve (pid %d)", o.loop, srv.pid())
	s := &series{name: fmt.Sprintf("`airlock serve` (long-lived), %d sequential POST /v1/tool-calls, pool 0", o.loop)}
	sampler := sampleRSS(srv.pid())
	for i := 0; i < o.loop && ctx.Err() == nil; i++ {
		t := time.Now()
		err := postToolCall(ctx, base)
		if err != nil {
			s.fail(err)
		} else {
			s.add(time.Since(t))
		}
	}
	return s, sampler.finish(), ctx.Err()
}

// postToolCall sends print(1) and checks the answer is a 200 with output 1.
func postToolCall(ctx context.Context, base string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/tool-calls", bytes.NewReader([]byte(loadtest.DefaultBody)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", res.StatusCode, body)
	}
	if !bytes.Contains(body, []byte(`"stdout":"1\n"`)) {
		return fmt.Errorf("unexpected answer: %.200s", body)
	}
	return nil
}
