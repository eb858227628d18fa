package builder_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// rig is a Manager on the real daemon with a Bolt store in a temp dir.
type rig struct {
	m     *builder.Manager
	dc    *client.Client
	store state.Store
}

func newRig(t *testing.T) *rig {
	t.Helper()
	dc := envtest.Docker(t)
	return rigOn(dc, openStore(t, t.TempDir()), os.Getenv("AIRLOCK_DEBIAN_MIRROR"))
}

// openStore opens a Bolt store in dir, closed at cleanup.
func openStore(t *testing.T, dir string) state.Store {
	t.Helper()
	st, err := state.OpenBolt(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// rigOn is a rig on dc and st whose builds use mirror ("": the base's).
func rigOn(dc *client.Client, st state.Store, mirror string) *rig {
	cfg := builder.DefaultConfig()
	cfg.Bases = envtest.Bases()
	cfg.Mirror = mirror
	scfg := sandbox.DefaultConfig()
	scfg.ReapInterval = 0
	m := builder.New(cfg, dc, st, builder.SandboxRunners(dc, scfg, nil), nil)
	return &rig{m: m, dc: dc, store: st}
}

// baseMirror is the Debian mirror of the shell base image's
// sources.list (read from a created, never started container).
func baseMirror(t *testing.T, dc *client.Client) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := dc.ContainerCreate(ctx, &container.Config{Image: envtest.Bases()["shell"], Cmd: []string{"true"}}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dc.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) }()
	rc, _, err := dc.CopyFromContainer(ctx, c.ID, "/etc/apt/sources.list")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "deb" {
			return f[1]
		}
	}
	t.Fatalf("no deb line in the base's sources.list: %q", data)
	return ""
}

// removeAtEnd removes the environment name at cleanup and checks that no
// image, build container or check container of it is left.
func (r *rig) removeAtEnd(t *testing.T, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = r.m.Remove(ctx, name)
		assertNoImages(t, r.dc, name)
	})
}

// assertNoImages fails when an image of environment name exists.
func assertNoImages(t *testing.T, dc *client.Client, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	imgs, err := dc.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", builder.LabelEnvironment+"="+name))})
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) > 0 {
		t.Errorf("images of %s left: %v", name, imgs[0].RepoTags)
	}
}

// buildContainers counts the containers made from a base image by a build
// (the build container has no labels; it is recognised by its command).
func buildContainers(t *testing.T, dc *client.Client) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := dc.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range list {
		if strings.Contains(c.Command, "/airlock-build/build.sh") || c.Labels[sandbox.LabelKind] == "envcheck" {
			n++
		}
	}
	return n
}

// writeSpec writes a spec file (and extra files beside it, executable
// under bin/) into a temp dir and returns the spec's path.
func writeSpec(t *testing.T, spec string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "env.yaml")
	if err := os.WriteFile(p, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// events collects a build's events.
type events struct {
	mu  sync.Mutex
	all []environments.Event
}

func (e *events) add(ev environments.Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

func (e *events) steps() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		if ev.Type == environments.EventStep {
			out = append(out, ev.Step)
		}
	}
	return out
}

// stepTimes says how long each step took.
func (e *events) stepTimes() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	var step string
	var since time.Time
	for _, ev := range e.all {
		if ev.Type == environments.EventStep || ev.Type == environments.EventDone || ev.Type == environments.EventFailed {
			if step != "" {
				out = append(out, fmt.Sprintf("%s %s", step, ev.Time.Sub(since).Round(100*time.Millisecond)))
			}
			step, since = ev.Step, ev.Time
		}
	}
	return strings.Join(out, ", ")
}

// run executes code in image through a sandbox engine with a real call's settings.
func run(t *testing.T, dc *client.Client, img string, lang core.Language, code string) core.Result {
	t.Helper()
	cfg := sandbox.DefaultConfig()
	cfg.ReapInterval = 0
	cfg.Images = map[core.Language]string{core.Python: img, core.Shell: img}
	e := sandbox.New(cfg, dc, nil)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = e.Close(ctx)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.Exec(ctx, core.Request{Language: lang, Code: code, Owner: "t", Limits: core.Limits{Timeout: time.Minute}})
	if err != nil {
		t.Fatalf("exec in %s: %v", img, err)
	}
	return res
}
