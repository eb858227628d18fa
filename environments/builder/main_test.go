package builder_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/state"
)

// shared is the python environment several tests use, built once per test
// binary run (the build is the slow part) and removed in TestMain.
var shared struct {
	once    sync.Once
	rig     *rig
	dir     string // the spec's folder
	path    string // the spec
	src     environments.Source
	rec     environments.Record
	events  events
	elapsed time.Duration
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.rig != nil && shared.rec.Name != "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := shared.rig.m.Remove(ctx, shared.rec.Name); err != nil {
			fmt.Fprintln(os.Stderr, "remove the shared environment:", err)
		}
		cancel()
	}
	if shared.rig != nil {
		_ = shared.rig.store.Close()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedSpec is the shared environment: a Debian package and a CLI the
// default image lacks (python3-toolz, tree), a package that ships a setuid
// file (fuse3's fusermount3: the build strips it), a wheel the test
// writes into a local wheelhouse, a file and an env variable.
const sharedSpec = `name: %s
base: python
apt: [python3-toolz, tree, fuse3]
pip: [airlockdemo==1.0]
wheels: ./wheelhouse
files: {/opt/demo/regions.csv: ./regions.csv}
env: {DEMO_DATA: /opt/demo}
check_imports: [toolz, airlockdemo]
check_commands: ["tree --version", "test -r $DEMO_DATA/regions.csv"]
`

// sharedEnv builds the shared environment once; a test that needs it
// calls this first.
func sharedEnv(t *testing.T) {
	t.Helper()
	dc := envtest.Docker(t) // skips here, not inside once
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "airlock-envtest-")
		if err != nil {
			shared.err = err
			return
		}
		shared.dir = dir
		st, err := state.OpenBolt(filepath.Join(dir, "state"))
		if err != nil {
			shared.err = err
			return
		}
		shared.rig = rigOn(dc, st, os.Getenv("AIRLOCK_DEBIAN_MIRROR"))
		if err := os.Mkdir(filepath.Join(dir, "wheelhouse"), 0o755); err != nil {
			shared.err = err
			return
		}
		if _, err := envtest.Wheel(filepath.Join(dir, "wheelhouse"), "airlockdemo", "1.0",
			map[string]string{"airlockdemo/__init__.py": "def answer():\n    return 42\n"}); err != nil {
			shared.err = err
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "regions.csv"), []byte("region,n\nnorth,1\n"), 0o644); err != nil {
			shared.err = err
			return
		}
		shared.path = filepath.Join(dir, "env.yaml")
		if err := os.WriteFile(shared.path, []byte(fmt.Sprintf(sharedSpec, envtest.Name("t-demo"))), 0o644); err != nil {
			shared.err = err
			return
		}
		if shared.src, shared.err = environments.Load(shared.path); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
		defer cancel()
		start := time.Now()
		shared.rec, _, shared.err = shared.rig.m.Build(ctx, shared.src, shared.events.add)
		shared.elapsed = time.Since(start)
		if shared.rec.Name == "" {
			shared.rec.Name = shared.src.Spec.Name
		}
	})
	if shared.err != nil {
		t.Fatalf("build the shared environment: %v\nlog:\n%s", shared.err, tail(shared.rec.LogTail))
	}
}

func tail(lines []string) string {
	out := ""
	for _, l := range lines {
		out += "  " + l + "\n"
	}
	return out
}
