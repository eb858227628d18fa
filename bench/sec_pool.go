package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/sandbox"
)

// pandasSnippet is issue 3's data-science snippet.
const pandasSnippet = "import pandas as pd; pd.DataFrame({'a': range(1000)}).describe()"

// sectionPool is issue 3's bench, in-process: print(1) from the warm pool
// vs a cold runner container vs `docker run --rm`, the pandas snippet warm
// vs `docker run --rm`, and the memory of an idle pooled container.
func sectionPool(ctx context.Context, o options, q *quieter, rep *report) error {
	warm, boot, err := startEngine(ctx, o, 2, nil)
	if err != nil {
		return fmt.Errorf("warm engine: %w", err)
	}
	defer closeEngine(warm)
	cold, _, err := startEngine(ctx, o, 0, nil)
	if err != nil {
		return fmt.Errorf("cold engine: %w", err)
	}
	defer closeEngine(cold)
	env := childEnv()
	engineRun := func(e *sandbox.Engine, code, want string) func(context.Context) error {
		return func(ctx context.Context) error {
			res, err := e.Exec(ctx, python(code))
			return checkResult(res, err, want)
		}
	}
	dockerCall := func(code, want string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, _, err := timedRun(ctx, env, want, dockerRun(o.pythonImg, code)...)
			return err
		}
	}
	pw := &variant{s: &series{name: "print(1) · warm pool (engine.Exec, PoolSize 2)"}, run: engineRun(warm, "print(1)", "1\n")}
	pc := &variant{s: &series{name: "print(1) · cold runner container (engine.Exec, PoolSize 0)"}, run: engineRun(cold, "print(1)", "1\n")}
	pd := &variant{s: &series{name: "print(1) · `docker run --rm --network none`"}, run: dockerCall("print(1)", "1\n")}
	dw := &variant{s: &series{name: "pandas describe · warm pool"}, run: engineRun(warm, pandasSnippet, "")}
	dd := &variant{s: &series{name: "pandas describe · `docker run --rm --network none`"}, run: dockerCall(pandasSnippet, "")}
	vs := []*variant{pw, pc, pd, dw, dd}
	wait := func(ctx context.Context) error { return q.wait(ctx, warm, cold) }
	for _, v := range vs { // warm caches; not measured
		if err := wait(ctx); err != nil {
			return err
		}
		if err := v.run(ctx); err != nil {
			return fmt.Errorf("warm-up %s: %w", v.s.name, err)
		}
	}
	logf("section 2: %d interleaved rounds of %d variants (each warm call waits for a refilled pool)", o.n, len(vs))
	watch, err := watchCreates(ctx, sandbox.LabelInstance+"="+benchInstance)
	if err != nil {
		return err
	}
	if err := interleave(ctx, q, o.n, vs, wait); err != nil {
		watch.stop()
		return err
	}
	creates, createsErr := watch.stop()
	if err := wait(ctx); err != nil {
		return err
	}
	mem, memErr := poolMemory(ctx, benchInstance)

	t := &table{title: fmt.Sprintf("2. Warm pool — in-process sandbox engine, N=%d per variant, interleaved", o.n),
		head: []string{"variant", "n", "failed", "p50", "p95", "max", "docker run ÷ variant, p50", "p95"}}
	for _, g := range [][2]*variant{{pw, pd}, {pc, pd}, {pd, pd}, {dw, dd}, {dd, dd}} {
		v, base := g[0].s, g[1].s
		t.row(v.name, strconv.Itoa(len(v.d)), v.failures(), ms(v.pct(50)), ms(v.pct(95)), ms(v.max()),
			ratio(base.pct(50), v.pct(50)), ratio(base.pct(95), v.pct(95)))
	}
	t.note("Target ≥30× faster than `docker run --rm` in the same run: print(1) warm is %s at p50 (%s at p95); pandas warm is %s at p50 (%s at p95).",
		ratio(pd.s.pct(50), pw.s.pct(50)), ratio(pd.s.pct(95), pw.s.pct(95)), ratio(dd.s.pct(50), dw.s.pct(50)), ratio(dd.s.pct(95), dw.s.pct(95)))
	t.note("Warm pool vs cold runner container: %s faster at p50. First warm container ready %s after engine start (image with numpy, pandas, matplotlib preloaded).",
		ratio(pc.s.pct(50), pw.s.pct(50)), ms(boot))
	if createsErr != nil {
		t.note("Containers created during the rounds: not counted (%v).", createsErr)
	} else {
		t.note("Containers created during the rounds: %d one-shot (cold calls made: %d, so %d warm calls fell back to cold) and %d pool refills.",
			creates["oneshot"], len(pc.s.d)+pc.s.failed, max(creates["oneshot"]-len(pc.s.d)-pc.s.failed, 0), creates["pool"])
	}
	if memErr != nil {
		t.note("Idle pooled container memory: not read (%v).", memErr)
	} else {
		var parts []string
		for _, m := range mem {
			parts = append(parts, fmt.Sprintf("%s: docker stats %s, cgroup usage %s (page cache included), anonymous/RSS %s",
				m.id[:12], m.dockerStats, mib(m.usage), mib(m.rss)))
		}
		t.note("Idle pooled container memory (%d containers): %s.", len(mem), strings.Join(parts, "; "))
	}
	t.note("The engine path is in-process (no CLI process, no HTTP); the docker baseline includes the docker CLI process. Container removal is off the engine caller's path but inside `docker run --rm`.")
	rep.table(t)
	return nil
}
