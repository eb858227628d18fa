package builder

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/environments"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// craft commits an image from the shell base after running script in it
// as root, with cfg's user, entrypoint and the base's labels; it is
// removed at cleanup.
func craft(t *testing.T, dc *client.Client, base baseInfo, script string, mod func(*container.Config)) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := dc.ContainerCreate(ctx, &container.Config{Image: base.id, User: "0:0", Cmd: []string{"/bin/sh", "-c", script}}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = dc.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) }()
	waitC, errC := dc.ContainerWait(ctx, c.ID, container.WaitConditionNextExit)
	if err := dc.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case w := <-waitC:
		if w.StatusCode != 0 {
			t.Fatalf("craft script exited %d", w.StatusCode)
		}
	case err := <-errC:
		t.Fatal(err)
	}
	cfg := &container.Config{User: sandbox.SandboxUser, Cmd: []string{"/bin/bash"}, WorkingDir: "/work", Env: base.env, Labels: base.labels}
	if mod != nil {
		mod(cfg)
	}
	res, err := dc.ContainerCommit(ctx, c.ID, container.CommitOptions{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = (&Manager{docker: dc}).removeImage(context.Background(), res.ID) })
	return res.ID
}

// TestChecksRefuseBadImages: the checks refuse an image with a setuid
// file, one whose user is root and one with an entrypoint, naming what is
// wrong, whatever produced them.
func TestChecksRefuseBadImages(t *testing.T) {
	// Parallel, and so are its cases: each crafts its own image and checks
	// it, with no timing bound.
	t.Parallel()
	dc := envtest.Docker(t)
	m := New(Config{Bases: envtest.Bases()}, dc, state.NewMemory(nil), SandboxRunners(dc, sandbox.DefaultConfig(), nil), nil)
	// The cases run after this function returns: the context ends with
	// the test, not with the function.
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	t.Cleanup(cancel)
	base, err := m.base(ctx, environments.Shell)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, script string
		mod          func(*container.Config)
		want         string
	}{
		{"setuid", "mkdir -p /opt/x && cp /bin/true /opt/x/su && chmod u+s /opt/x/su && cp /bin/true /usr/local/sg && chmod g+s /usr/local/sg", nil,
			"check setuid: setuid/setgid files: /opt/x/su, /usr/local/sg"},
		{"root user", "true", func(c *container.Config) { c.User = "0:0" }, `check image: the image user is "0:0"`},
		{"entrypoint", "true", func(c *container.Config) { c.Entrypoint = []string{"/bin/sh", "-c"} }, "check image: the image has an entrypoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			id := craft(t, dc, base, tc.script, tc.mod)
			var lines []string
			tr := newTracker(func(e environments.Event) {
				if e.Type == environments.EventLog {
					lines = append(lines, e.Line)
				}
			}, "n", []string{environments.StepChecks}, 0)
			_, err := m.checkImage(ctx, "bad", id, base, environments.Spec{Name: "bad", Base: environments.Shell}, tr)
			var be *environments.BuildError
			if !errors.As(err, &be) || be.Step != environments.StepChecks || !errors.Is(err, core.ErrInvalid) {
				t.Fatalf("checks: %v (log %v)", err, lines)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q lacks %q", err, tc.want)
			}
		})
	}
}

// TestChecksNameFailingImportsAndCommands: in the python base (which
// passes every other check) a module that does not import and a command
// that fails are named, with what went wrong.
func TestChecksNameFailingImportsAndCommands(t *testing.T) {
	t.Parallel() // its own manager and memory store; no timing bound
	dc := envtest.Docker(t)
	m := New(Config{Bases: envtest.Bases()}, dc, state.NewMemory(nil), SandboxRunners(dc, sandbox.DefaultConfig(), nil), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base, err := m.base(ctx, environments.Python)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTracker(func(environments.Event) {}, "n", []string{environments.StepChecks}, 0)
	spec := environments.Spec{Name: "p", Base: environments.Python, CheckImports: []string{"json", "airlock_no_such_module"}, CheckCommands: []string{"true", "echo nope >&2; exit 3"}}
	checks, err := m.checkImage(ctx, "p", base.id, base, spec, tr)
	if err == nil {
		t.Fatal("accepted")
	}
	byName := map[string]environments.Check{}
	for _, c := range checks {
		byName[c.Name] = c
	}
	for name, ok := range map[string]bool{"image": true, "setuid": true, "controller": true, "processes": true, "imports": false,
		`command "true"`: true, `command "echo nope >&2; exit 3"`: false} {
		if c, found := byName[name]; !found || c.OK != ok {
			t.Errorf("check %s: %+v, want ok=%v", name, c, ok)
		}
	}
	if d := byName["imports"].Detail; !strings.Contains(d, `module "airlock_no_such_module" does not import (ModuleNotFoundError`) || strings.Contains(d, `"json"`) {
		t.Errorf("imports detail %q", d)
	}
	if d := byName[`command "echo nope >&2; exit 3"`].Detail; !strings.Contains(d, "exit 3") || !strings.Contains(d, "nope") {
		t.Errorf("command detail %q", d)
	}
}
