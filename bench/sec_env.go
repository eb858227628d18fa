package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/environments/envtest/envuse"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// benchEnvName is the environment section 12 builds (kept between runs:
// an unchanged spec is never rebuilt).
const benchEnvName = "bench-env"

// sectionEnv is issue 28's bench: the build of the test environment (a
// Debian package, a CLI and a wheel) and of the unchanged spec (a no-op),
// the first call to the built but cold environment, and warm print(1) in
// the custom environment beside the built-in one, interleaved.
func sectionEnv(ctx context.Context, o options, q *quieter, rep *report) error {
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		return err
	}
	defer dc.Close()
	store := state.NewMemory(nil)
	bcfg := builder.DefaultConfig()
	bcfg.Bases = map[string]string{environments.Python: o.pythonImg, environments.Shell: "airlock/shell:latest"}
	bcfg.Mirror = os.Getenv("AIRLOCK_DEBIAN_MIRROR")
	scfg := sandbox.DefaultConfig()
	scfg.ReapInterval = 0
	m := builder.New(bcfg, dc, store, builder.SandboxRunners(dc, scfg, nil), nil)
	dir := filepath.Join(o.workdir, "env")
	src, err := envuse.UseSource(dir, benchEnvName)
	if err != nil {
		return err
	}
	t0 := time.Now()
	rec, built, err := m.Build(ctx, src, nil)
	first := time.Since(t0)
	if err != nil {
		return fmt.Errorf("build %s: %w", benchEnvName, err)
	}
	t1 := time.Now()
	if _, again, err := m.Build(ctx, src, nil); err != nil || again {
		return fmt.Errorf("unchanged spec rebuilt (%v) or failed: %w", again, err)
	}
	noop := time.Since(t1)

	eng, _, err := startEngine(ctx, o, 2, nil)
	if err != nil {
		return err
	}
	defer closeEngine(eng)
	inEnv := func(owner, code string) core.Request {
		r := core.Request{Language: core.Python, Code: code, Owner: owner, Environment: rec.Name, Image: rec.Image, EnvironmentHash: rec.Hash}
		return r
	}
	cold := &series{name: "first call to the built, cold environment (a new owner, no warm container of it)"}
	for i := 0; i < 3; i++ {
		if err := q.wait(ctx, eng); err != nil {
			return err
		}
		t := time.Now()
		res, err := eng.Exec(ctx, inEnv("bench-cold-"+strconv.Itoa(i), envuse.UseProbe))
		d := time.Since(t)
		if err := checkResult(res, err, "toolz airlockuse 42\n"); err != nil {
			return fmt.Errorf("first call in %s: %w", rec.Name, err)
		}
		cold.add(d)
	}
	other, err := buildElsewhere(ctx, dc, store, m, rec, eng)
	if err != nil {
		return err
	}
	run := func(req core.Request) func(context.Context) error {
		return func(ctx context.Context) error {
			res, err := eng.Exec(ctx, req)
			return checkResult(res, err, "1\n")
		}
	}
	bi := &variant{s: &series{name: "print(1) · warm, built-in python"}, run: run(python("print(1)"))}
	ce := &variant{s: &series{name: "print(1) · warm, custom environment " + rec.Name}, run: run(inEnv("bench", "print(1)"))}
	vs := []*variant{bi, ce}
	wait := func(ctx context.Context) error { return q.wait(ctx, eng) }
	for _, v := range vs {
		if err := v.run(ctx); err != nil {
			return fmt.Errorf("warm-up %s: %w", v.s.name, err)
		}
	}
	logf("section 12: %d interleaved rounds of %d variants", o.n, len(vs))
	if err := interleave(ctx, q, o.n, vs, wait); err != nil {
		return err
	}
	t := &table{title: fmt.Sprintf("12. Environments — in-process sandbox engine, N=%d per warm variant, interleaved", o.n),
		head: []string{"variant", "n", "failed", "p50", "p95", "max", "÷ built-in, p50"}}
	for _, v := range []*series{bi.s, ce.s, cold} {
		t.row(v.name, strconv.Itoa(len(v.d)), v.failures(), ms(v.pct(50)), ms(v.pct(95)), ms(v.max()), ratio(v.pct(50), bi.s.pct(50)))
	}
	buildNote := fmt.Sprintf("built in %s (apt python3-toolz tree, a wheel from a local wheelhouse, checks)", first.Round(100*time.Millisecond))
	if !built {
		buildNote = fmt.Sprintf("image already present from an earlier run (not rebuilt; its first build is in `airlock env list`: %.1f s recorded)", rec.BuildSeconds)
	}
	t.note("Target: warm print(1) in a custom environment within 1.2× of the built-in one: %s at p50.", ratio(ce.s.pct(50), bi.s.pct(50)))
	t.note("Build of the test environment %s: %s, image %s, %s.", rec.Name, buildNote, rec.Image, mib(rec.SizeBytes))
	t.note("Unchanged spec: %s (a no-op: the content-hash tag exists; target under 2 s).", ms(noop))
	t.note("The first call to a built, cold environment pays one container start (no build); the engine keeps no container of an environment nobody uses.")
	t.note("Many hosts: a worker lacking the image builds it from the source kept in the state store before the call (environments/hosts; simulated on this daemon under a private image namespace): build %s, then the call %s; first call on that worker %s in all.",
		other.build.Round(100*time.Millisecond), ms(other.call), (other.build + other.call).Round(100*time.Millisecond))
	rep.table(t)
	return nil
}
