package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// benchInstance labels every in-process engine's containers. The engines
// must share it: an engine's reaper treats containers of another instance
// made by the same pid as leftovers of an earlier incarnation and removes
// them, which would empty a sibling engine's warm pool.
var benchInstance = func() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "bench-" + hex.EncodeToString(b[:])
}()

// startEngine builds and starts an in-process engine with a real Docker
// client and the given warm pool size; with a pool it waits for the first
// warm container and returns how long that took. reg (nil: none) gets the
// engine's metrics.
func startEngine(ctx context.Context, o options, poolSize int, reg prometheus.Registerer) (*sandbox.Engine, time.Duration, error) {
	cfg := sandbox.DefaultConfig()
	cfg.Metrics = reg
	cfg.PoolSize = poolSize
	cfg.Instance = benchInstance
	cfg.CgroupParent = o.cgroup
	cfg.Images = map[core.Language]string{core.Python: o.pythonImg, core.Shell: "airlock/shell:latest"}
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		return nil, 0, err
	}
	e := sandbox.New(cfg, dc, nil)
	t := time.Now()
	if err := e.Start(ctx); err != nil {
		return nil, 0, err
	}
	wctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	if err := e.WaitWarm(wctx); err != nil {
		closeEngine(e)
		return nil, 0, err
	}
	return e, time.Since(t), nil
}

// closeEngine drains pools and waits for the engine's containers to go.
func closeEngine(e *sandbox.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		logf("engine close: %v", err)
	}
}

// python is a one-shot run_python request.
func python(code string) core.Request {
	return core.Request{Language: core.Python, Code: code, Owner: "bench"}
}

// checkResult turns an unexpected outcome into an error.
func checkResult(res core.Result, err error, wantStdout string) error {
	if err != nil {
		return err
	}
	if res.Status != core.StatusOK {
		return fmt.Errorf("status %s: %s %s", res.Status, res.Message, strings.TrimSpace(res.Stderr))
	}
	if wantStdout != "" && res.Stdout != wantStdout {
		return fmt.Errorf("stdout %q, want %q", res.Stdout, wantStdout)
	}
	return nil
}

// engineWithStore starts a sandbox engine without a warm pool and an
// embedded (Bolt) state store in a fresh folder named after prefix under
// o.workdir: what the snapshot and resume sections measure against. done
// closes both and removes the folder.
func engineWithStore(ctx context.Context, o options, prefix string) (eng *sandbox.Engine, st state.Store, done func(), err error) {
	eng, _, err = startEngine(ctx, o, 0, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	dir, err := os.MkdirTemp(o.workdir, prefix)
	if err != nil {
		closeEngine(eng)
		return nil, nil, nil, err
	}
	bolt, err := state.OpenBolt(filepath.Join(dir, "state.db"))
	if err != nil {
		closeEngine(eng)
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	return eng, bolt, func() { bolt.Close(); closeEngine(eng); os.RemoveAll(dir) }, nil
}
