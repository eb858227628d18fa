package envuse

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// UseSpec is the environment the tests of environments in use build: a
// Debian package and a CLI the default image lacks (python3-toolz, tree)
// and a wheel written here into a local wheelhouse (airlockuse).
const UseSpec = `name: %s
base: python
apt: [python3-toolz, tree]
pip: [airlockuse==1.0]
wheels: ./wheelhouse
check_imports: [toolz, airlockuse]
check_commands: ["tree --version"]
`

// UseProbe is Python that imports what UseSpec adds and prints
// "toolz airlockuse 42" in its environment.
const UseProbe = "import toolz, airlockuse; print('toolz', 'airlockuse', airlockuse.answer())"

// UseSource writes UseSpec's wheelhouse and spec for environment name
// into dir and loads them.
func UseSource(dir, name string) (environments.Source, error) {
	if err := os.MkdirAll(filepath.Join(dir, "wheelhouse"), 0o755); err != nil {
		return environments.Source{}, err
	}
	if _, err := envtest.Wheel(filepath.Join(dir, "wheelhouse"), "airlockuse", "1.0",
		map[string]string{"airlockuse/__init__.py": "def answer():\n    return 42\n"}); err != nil {
		return environments.Source{}, err
	}
	spec := filepath.Join(dir, "env.yaml")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(UseSpec, name)), 0o644); err != nil {
		return environments.Source{}, err
	}
	return environments.Load(spec)
}

// Manager returns an environments manager on dc and store that builds
// from the pinned bases (Bases) with $AIRLOCK_DEBIAN_MIRROR.
func Manager(dc *client.Client, store state.Store) *builder.Manager {
	cfg := builder.DefaultConfig()
	cfg.Bases = envtest.Bases()
	cfg.Mirror = os.Getenv("AIRLOCK_DEBIAN_MIRROR")
	scfg := sandbox.DefaultConfig()
	scfg.ReapInterval = 0
	return builder.New(cfg, dc, store, builder.SandboxRunners(dc, scfg, nil), nil)
}

// BuildUse builds UseSpec as environment name with m (a no-op when its
// image exists: a fixed name lets every test binary after the first reuse
// it) and returns its record.
func BuildUse(ctx context.Context, m *builder.Manager, dir, name string) (environments.Record, error) {
	src, err := UseSource(dir, name)
	if err != nil {
		return environments.Record{}, err
	}
	rec, _, err := m.Build(ctx, src, nil)
	if err != nil {
		return rec, fmt.Errorf("build %s: %w (log: %v)", name, err, rec.LogTail)
	}
	return rec, nil
}

// UseName is the fixed name of the test environment (its image is kept
// between runs: an unchanged spec is never rebuilt).
const UseName = "t-airlock-use"
