package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/internal/envservice"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// envResolver is the dispatcher's environment resolver. The dispatcher is
// built before the state store is open, so its registry is set later
// (use); until then, and in commands without a state store, it knows the
// built-in environments only.
type envResolver struct {
	r atomic.Pointer[environments.Resolver]
}

// Resolve resolves name (environments.Resolver.Resolve).
func (e *envResolver) Resolve(ctx context.Context, name string, may func(string) bool) (environments.Target, error) {
	return e.r.Load().Resolve(ctx, name, may)
}

// use resolves with the environments of the state store st from now on.
func (e *envResolver) use(st state.Store) {
	e.r.Store(environments.NewResolver(environments.NewRegistry(st)))
}

// environments is serve's environments service on the state store: the
// stack's dispatcher resolves with it, and with a worker in this process
// (a Docker daemon) it builds and removes environments too.
func (s *stack) environments(store state.Store, f *stackFlags) (*envservice.Service, error) {
	s.envs.use(store)
	reg := environments.NewRegistry(store)
	if s.engine == nil {
		return envservice.New(reg, nil, nil, s.log), nil
	}
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		return nil, err
	}
	cfg := builder.DefaultConfig()
	cfg.Bases = map[string]string{environments.Python: f.python, environments.Shell: f.shell}
	cfg.Retire = s.engine.DropEnvironment // idle warm containers would hold the image
	scfg := sandbox.DefaultConfig()
	scfg.Runtime = f.runtime
	m := builder.New(cfg, dc, store, builder.SandboxRunners(dc, scfg, s.log), s.log)
	return envservice.New(reg, m, s.engine.Warm, s.log), nil
}

// keyEnvironments is what each owner's calls may name as their
// environment (dispatcher.Call.Environments): every one without keys
// (insecure) or for an admin key, else its keys-file environments=.
func keyEnvironments(ks *keys.Set, insecure bool) func(owner string) []string {
	return func(owner string) []string {
		p := ks.Policy(owner)
		if insecure || p.IsAdmin() {
			return []string{dispatcher.AllEnvironments}
		}
		if p == nil {
			return nil
		}
		return p.Environments
	}
}

// registerEnvironment adds --environment to a command's flags.
func registerEnvironment(fs *flag.FlagSet, env *string) {
	fs.StringVar(env, "environment", os.Getenv("AIRLOCK_ENVIRONMENT"), "environment the calls run in: python, shell or a custom one built with `airlock env build` (default python, shell for execute_shell; env AIRLOCK_ENVIRONMENT)")
}

// useLocalEnvironments lets a local command's dispatcher resolve the
// custom environment env from the embedded state store `airlock env
// build` records in ($AIRLOCK_DATA_DIR); a built-in one needs nothing.
// The returned func closes the store.
func (s *stack) useLocalEnvironments(env string) (func(), error) {
	if env == "" || environments.Builtin(env) {
		return func() {}, nil
	}
	store, err := openState(nil, state.DefaultDataDir())
	if err != nil {
		return nil, fmt.Errorf("environment %s: open the state store of `airlock env build` (%s): %w", env, state.DefaultDataDir(), err)
	}
	s.envs.use(store)
	return func() { _ = store.Close() }, nil
}
