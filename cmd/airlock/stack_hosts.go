package main

import (
	"flag"
	"os"

	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/environments/hosts"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/queue"
	"github.com/airlock-dev/airlock/sandbox"
)

// envNamespaceEnv is the environment fallback of --environment-namespace.
const envNamespaceEnv = "AIRLOCK_ENVIRONMENT_NAMESPACE"

// registerEnvNamespace adds a worker's --environment-namespace.
func registerEnvNamespace(fs *flag.FlagSet, ns *string) {
	fs.StringVar(ns, "environment-namespace", os.Getenv(envNamespaceEnv),
		"with Redis: tag the environment images this worker builds airlock/env-NAME.NS:HASH, so workers sharing one Docker daemon hold their own (a-z0-9; env "+envNamespaceEnv+")")
}

// envHolder wraps a Redis worker's engine run so a call in a custom
// environment this host lacks builds it first from the source serve keeps
// in the state store (environments/hosts), and returns the worker config's
// Environments: the image hashes this host holds, which its heartbeat
// advertises. Without Redis, a state store or the real sandbox engine
// (one process: the image is where it was built) run is returned as is.
func (s *stack) envHolder(f *stackFlags, run jobs.Engine) (jobs.Engine, *hosts.Holder, error) {
	if f.redis == "" || f.snapState == nil || s.engine == nil {
		return run, nil, nil
	}
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		return nil, nil, err
	}
	cfg := builder.DefaultConfig()
	cfg.Bases = map[string]string{environments.Python: f.python, environments.Shell: f.shell}
	cfg.Mirror = os.Getenv("AIRLOCK_DEBIAN_MIRROR")
	cfg.IndexURL = os.Getenv("AIRLOCK_PIP_INDEX_URL")
	scfg := sandbox.DefaultConfig()
	scfg.Runtime = f.runtime
	m := builder.New(cfg, dc, f.snapState, builder.SandboxRunners(dc, scfg, s.log), s.log)
	h, err := hosts.New(hosts.Config{Namespace: f.envNamespace}, dc, m, environments.NewRegistry(f.snapState), s.log)
	if err != nil {
		return nil, nil, err
	}
	return hosts.NewEngine(run, h), h, nil
}

// advertiseOnBuild makes w advertise a new environment as soon as h built it.
func advertiseOnBuild(h *hosts.Holder, w queue.Worker) {
	if h != nil {
		h.OnHeld(func() { queue.Advertise(w) })
	}
}
