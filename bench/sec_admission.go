package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/client"
)

// admissionOwners is how many owners hold warm containers while new
// owners make their first call (issue 33: 8, which fill the default 2 GiB
// warm budget at 256 MiB each).
const admissionOwners = 8

// admissionRows is section 6's admission part (issue 33): a server whose
// warm budget is full of 8 owners' idle containers; new owners then make
// their first call, one every 3 s (the fill's time to evict the
// longest-idle owned container and boot a generic one). It also reports
// the memory of one idle warm container (the cgroup's usage less its
// inactive page cache, as `docker stats` shows it) and how many 4 GiB
// keeps warm.
func admissionRows(ctx context.Context, o options, q *quieter, rep *report, t *table) error {
	newOwners := max(3, o.n/3)
	var ks []string
	for i := 0; i < admissionOwners+newOwners; i++ {
		ks = append(ks, fmt.Sprintf("bench-admission-key-%04d", i))
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	keys := filepath.Join(o.workdir, "admission-keys")
	if err := os.WriteFile(keys, []byte(strings.Join(ks, "\n")+"\n"), 0o600); err != nil {
		return err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := "http://" + addr
	args := []string{o.airlock, "serve", "--keys-file", keys, "--rate", "-1", "--concurrency", "4", "--python-image", o.pythonImg, "--shell-image", o.batch.shellImg, "--addr", addr,
		"--data-dir", filepath.Join(o.workdir, "admission-data")}
	srv, err := startServer(filepath.Join(o.workdir, "serve-admission.log"), childEnv(), args...)
	if err != nil {
		return err
	}
	defer srv.stop(30 * time.Second)
	if err := waitHTTP(ctx, srv, base+"/readyz", time.Minute); err != nil {
		return err
	}
	call := func(k string) error {
		c, err := client.New(base, client.WithAPIKey(k))
		if err != nil {
			return err
		}
		res, err := c.CallTool(ctx, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "print(1)"}})
		if err != nil {
			return err
		}
		if res.Result.Status != "ok" {
			return fmt.Errorf("status %s: %s", res.Result.Status, res.Result.Stderr)
		}
		return nil
	}
	logf("section 6: %d owners take warm containers, then %d new owners' first calls", admissionOwners, newOwners)
	for _, k := range ks[:admissionOwners] {
		if err := call(k); err != nil {
			return fmt.Errorf("owner %s: %w", k, err)
		}
		sleepCtx(ctx, 300*time.Millisecond) // past the spread window: one container each
	}
	if err := q.wait(ctx); err != nil {
		return err
	}
	before := scrapeCalls(ctx, base)
	first := &series{name: "new owner's first call"}
	for _, k := range ks[admissionOwners:] {
		sleepCtx(ctx, 3*time.Second)
		measure(ctx, first, func(context.Context) error { return call(k) })
	}
	t.row(fmt.Sprintf("new owner, %d others warm", admissionOwners), "first print(1)", strconv.Itoa(len(first.d)),
		ms(first.pct(50)), ms(first.pct(95)), "1 per 3 s", warmShare(before, scrapeCalls(ctx, base)), "")
	rep.figureMS("new owner's first call, 8 owners warm, p50", first.pct(50))
	if first.failed > 0 {
		t.note("%s: %d failed calls (first: %s)", first.name, first.failed, first.firstErr)
	}
	if mem := idleWarmMemory(ctx, srv.pid()); mem > 0 {
		rep.figure("memory of an idle warm python container", "MiB", float64(mem)/(1<<20))
		t.note("Memory of one idle warm python container (mean over this server's, cgroup usage less inactive page cache, as `docker stats`): %s; 4 GiB keeps %d warm, so %d owners at one container each (half that with --owner-spread's second container for back-to-back owners).",
			mib(mem), (4<<30)/mem, (4<<30)/mem)
	}
	return nil
}

// idleWarmMemory is the mean memory of the warm containers the server pid
// owns (label airlock.pid), read through `docker stats`.
func idleWarmMemory(ctx context.Context, pid int) int64 {
	out, err := exec.CommandContext(ctx, "docker", "ps", "-q", "--filter", "label=airlock.pid="+strconv.Itoa(pid)).Output()
	if err != nil {
		return 0
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return 0
	}
	out, err = exec.CommandContext(ctx, "docker", append([]string{"stats", "--no-stream", "--format", "{{.MemUsage}}"}, ids...)...).Output()
	if err != nil {
		return 0
	}
	var sum, n int64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if b := parseDockerSize(f[0]); b > 0 {
			sum, n = sum+b, n+1
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}

// parseDockerSize reads "86.2MiB" style sizes.
func parseDockerSize(s string) int64 {
	for _, u := range []struct {
		suf string
		m   float64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suf) {
			v, err := strconv.ParseFloat(strings.TrimSuffix(s, u.suf), 64)
			if err != nil {
				return 0
			}
			return int64(v * u.m)
		}
	}
	return 0
}
