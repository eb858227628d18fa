package builder_test

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

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
	// made records the containers the rig's manager and its check runners
	// created: what a test checks is gone, whatever other builds (another
	// test package's, in parallel) run on the same daemon.
	made *recordingDocker
}

// recordingDocker is the Docker client recording the id of every
// container created through it.
type recordingDocker struct {
	*client.Client
	mu  sync.Mutex
	ids []string
	// onCreate, when set, is told each created container's id.
	onCreate func(id string)
}

// ContainerCreate creates the container and records its id.
func (r *recordingDocker) ContainerCreate(ctx context.Context, cfg *container.Config, host *container.HostConfig, nw *network.NetworkingConfig, pf *ocispec.Platform, name string) (container.CreateResponse, error) {
	res, err := r.Client.ContainerCreate(ctx, cfg, host, nw, pf, name)
	if err == nil {
		r.mu.Lock()
		r.ids = append(r.ids, res.ID)
		r.mu.Unlock()
		if r.onCreate != nil {
			r.onCreate(res.ID)
		}
	}
	return res, err
}

// created is the ids recorded so far.
func (r *recordingDocker) created() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ids)
}

// existing is those of ids whose container still exists (in any state).
func existing(t *testing.T, dc *client.Client, ids []string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var left []string
	for _, id := range ids {
		_, err := dc.ContainerInspect(ctx, id)
		switch {
		case err == nil:
			left = append(left, id)
		case !errdefs.IsNotFound(err):
			t.Fatalf("inspect container %.12s: %v", id, err)
		}
	}
	return left
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
	made := &recordingDocker{Client: dc}
	m := builder.New(cfg, made, st, builder.SandboxRunners(made, scfg, nil), nil)
	return &rig{m: m, dc: dc, store: st, made: made}
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
