package builder_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/sandbox"
)

// TestBuildAptAndWheel builds an environment with a Debian package and a
// CLI the default image lacks and a wheel the test wrote into a local
// wheelhouse: a sandbox call in its image imports both, runs the CLI and
// sees the file and the env variable, as the sandbox user; the default
// image still lacks them. The record, the image's labels and the build's
// event log say what was built.
func TestBuildAptAndWheel(t *testing.T) {
	sharedEnv(t)
	rec := shared.rec
	t.Logf("build time of the test environment: %s (record: %.1fs), size %d (+%d), packages %v",
		shared.elapsed.Round(100*time.Millisecond), rec.BuildSeconds, rec.SizeBytes, rec.AddedBytes, rec.Packages)
	t.Logf("step times: %s", shared.events.stepTimes())
	if rec.Status != environments.StatusReady || !rec.Usable() || rec.Image != builder.ImageRepo(rec.Name)+":"+rec.Hash || len(rec.Hash) != 16 {
		t.Fatalf("record %+v", rec)
	}
	for _, want := range []string{"python3-toolz=", "tree=", "fuse3=", "airlockdemo==1.0"} {
		if !slices.ContainsFunc(rec.Packages, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("packages %v lack %s", rec.Packages, want)
		}
	}
	for _, c := range rec.Checks {
		if !c.OK {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
	names := make([]string, len(rec.Checks))
	for i, c := range rec.Checks {
		names[i] = c.Name
	}
	for _, want := range []string{"image", "setuid", "controller", "processes", "imports", `command "tree --version"`, "size"} {
		if !slices.Contains(names, want) {
			t.Errorf("checks %v lack %s", names, want)
		}
	}
	if steps := shared.events.steps(); !slices.Equal(steps, []string{"prepare", "apt-update", "apt", "pip", "files", "finish", "commit", "checks"}) {
		t.Errorf("steps %v", steps)
	}
	last := shared.events.all[len(shared.events.all)-1]
	if last.Type != environments.EventDone || last.Record == nil || last.Record.Hash != rec.Hash {
		t.Errorf("last event %+v", last)
	}

	// The image: the sandbox user, no entrypoint, the controller and the
	// environment's labels, and none of the build container's.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := shared.rig.dc.ImageInspect(ctx, rec.Image)
	if err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	if cfg.User != sandbox.SandboxUser || len(cfg.Entrypoint) > 0 || !slices.Equal(cfg.Cmd, []string{"/bin/bash"}) || cfg.WorkingDir != "/work" {
		t.Errorf("image config: user %q entrypoint %q cmd %q workdir %q", cfg.User, cfg.Entrypoint, cfg.Cmd, cfg.WorkingDir)
	}
	if cfg.Labels["airlock.runner"] != sandbox.RunnerPath || cfg.Labels[builder.LabelEnvironment] != rec.Name || cfg.Labels[builder.LabelHash] != rec.Hash {
		t.Errorf("image labels %v", cfg.Labels)
	}
	for k := range cfg.Labels {
		if strings.HasPrefix(k, "airlock.managed") || strings.HasPrefix(k, "airlock.expires") || strings.HasPrefix(k, "airlock.proc") {
			t.Errorf("image label %s leaked from a container", k)
		}
	}
	if !slices.Contains(cfg.Env, "DEMO_DATA=/opt/demo") || !slices.Contains(cfg.Env, "PATH=/usr/local/bin:/usr/bin:/bin") {
		t.Errorf("image env %v", cfg.Env)
	}

	res := run(t, shared.rig.dc, rec.Image, core.Python, `import toolz, airlockdemo, os, subprocess
print(airlockdemo.answer(), toolz.identity("tz"), os.environ["DEMO_DATA"])
print(open("/opt/demo/regions.csv").read().splitlines()[1])
print(subprocess.run(["tree", "--version"], capture_output=True, text=True).stdout.split()[0])
print(os.getuid() != 0, os.path.exists("/airlock-build"))
print(oct(os.stat("/usr/bin/fusermount3").st_mode & 0o7777))`)
	want := "42 tz /opt/demo\nnorth,1\ntree\nTrue False\n0o755\n"
	if res.Status != core.StatusOK || res.Stdout != want {
		t.Errorf("in the environment: status %s, stdout %q (want %q), stderr %q", res.Status, res.Stdout, want, res.Stderr)
	}
	def := run(t, shared.rig.dc, envtest.Bases()["python"], core.Python,
		"import importlib.util, shutil\nprint(importlib.util.find_spec('toolz'), importlib.util.find_spec('airlockdemo'), shutil.which('tree'))")
	if def.Status != core.StatusOK || def.Stdout != "None None None\n" {
		t.Errorf("the default image: status %s, stdout %q, stderr %q", def.Status, def.Stdout, def.Stderr)
	}

	// The build's events are in the registry's log, done last.
	evs, _, err := shared.rig.m.Registry().Events(ctx, rec.Name, rec.BuildID, 0, 10000, 0)
	if err != nil || len(evs) < 10 || evs[len(evs)-1].Type != environments.EventDone {
		t.Errorf("event log: %d events, err %v", len(evs), err)
	}
}

// TestUnchangedSpecIsNoop builds the shared spec again: nothing is
// rebuilt, it takes under 2 s, and the record and image stay; a record
// lost from the store is restored from the image.
func TestUnchangedSpecIsNoop(t *testing.T) {
	sharedEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, fresh := range []bool{false, true} {
		src, err := environments.Load(shared.path) // as the CLI does: read spec, wheels and files again
		if err != nil {
			t.Fatal(err)
		}
		m := shared.rig.m
		if fresh { // another host's store: no record yet
			m = newRig(t).m
		}
		var ev events
		start := time.Now()
		rec, built, err := m.Build(ctx, src, ev.add)
		took := time.Since(start)
		t.Logf("no-op rebuild (fresh store %v): %s", fresh, took.Round(time.Millisecond))
		if err != nil || built {
			t.Fatalf("rebuild: built %v, err %v", built, err)
		}
		if took > testscale.D(2*time.Second) {
			t.Errorf("a no-op rebuild took %s, over 2 s", took)
		}
		if rec.ImageID != shared.rec.ImageID || rec.Hash != shared.rec.Hash || rec.Status != environments.StatusReady || len(rec.Packages) != len(shared.rec.Packages) {
			t.Errorf("record after a no-op: %+v", rec)
		}
		if len(ev.all) != 1 || ev.all[0].Type != environments.EventDone {
			t.Errorf("events of a no-op: %+v", ev.all)
		}
	}
}

// TestShellFilesChangeRebuilds builds a shell environment with files only
// (no network), then changes one file: a new hash and image with the new
// bytes, and the old image gone; then removes it.
func TestShellFilesChangeRebuilds(t *testing.T) {
	// Parallel: its own rig, store and environment name, no timing bound.
	t.Parallel()
	r := newRig(t)
	name := envtest.Name("t-files")
	r.removeAtEnd(t, name)
	spec := "name: " + name + "\nbase: shell\nfiles: {/opt/t/data.txt: ./data.txt, /opt/t/bin: ./bin}\nenv: {T_DATA: /opt/t}\n" +
		"check_commands: [\"test -x /opt/t/bin/hello\", \"test -s $T_DATA/data.txt\"]\n"
	path := writeSpec(t, spec, map[string]string{"data.txt": "one\n", "bin/hello": "#!/bin/sh\necho hello\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := func() environments.Record {
		t.Helper()
		src, err := environments.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		var ev events
		rec, built, err := r.m.Build(ctx, src, ev.add)
		if err != nil || !built {
			t.Fatalf("build: built %v, err %v\nlog:\n%s", built, err, tail(rec.LogTail))
		}
		if steps := ev.steps(); !slices.Equal(steps, []string{"prepare", "files", "finish", "commit", "checks"}) {
			t.Errorf("steps %v (no apt: no network step)", steps)
		}
		t.Logf("built %s in %.1fs", rec.Image, rec.BuildSeconds)
		return rec
	}
	first := build()
	res := run(t, r.dc, first.Image, core.Shell, "cat /opt/t/data.txt; echo $T_DATA; /opt/t/bin/hello")
	if res.Stdout != "one\n/opt/t\nhello\n" {
		t.Errorf("first image: %q %q", res.Stdout, res.Stderr)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "data.txt"), []byte("two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	second := build()
	if second.Hash == first.Hash || second.ImageID == first.ImageID {
		t.Fatalf("a changed file kept hash %s", first.Hash)
	}
	if res := run(t, r.dc, second.Image, core.Shell, "cat /opt/t/data.txt"); res.Stdout != "two\n" {
		t.Errorf("second image: %q %q", res.Stdout, res.Stderr)
	}
	if _, err := r.dc.ImageInspect(ctx, first.Image); err == nil {
		t.Errorf("the older image %s is still there", first.Image)
	}
	list, err := r.m.List(ctx)
	if err != nil || len(list) < 3 || list[0].Name != "python" || list[1].Name != "shell" || !slices.ContainsFunc(list, func(x environments.Record) bool { return x.Name == name }) {
		t.Errorf("list: %v %+v", err, list)
	}
	if err := r.m.Remove(ctx, name); err != nil {
		t.Fatal(err)
	}
	assertNoImages(t, r.dc, name)
	if _, err := r.m.Get(ctx, name); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("get after remove: %v", err)
	}
	if err := r.m.Remove(ctx, name); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("remove twice: %v", err)
	}
	if err := r.m.Remove(ctx, "python"); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("remove python: %v", err)
	}
}

// TestMissingPackageFails builds a spec naming a Debian package that does
// not exist: the build fails naming it, in the apt step, and leaves no
// image and no container behind; the record says so and serves nothing.
func TestMissingPackageFails(t *testing.T) {
	// Parallel: its own rig, store and name, no timing bound; what it
	// checks is gone are the containers its own build created.
	t.Parallel()
	// The mirror the base came from, given explicitly as a URL of its own
	// (the port spelled out), so the build's sources.list is rewritten.
	dc := envtest.Docker(t)
	mirror := baseMirror(t, dc)
	if u, err := url.Parse(mirror); err == nil && u.Scheme == "http" && u.Port() == "" {
		u.Host += ":80"
		mirror = u.String()
	}
	r := rigOn(dc, openStore(t, t.TempDir()), mirror)
	name := envtest.Name("t-missing")
	r.removeAtEnd(t, name)
	missing := "airlock-no-such-package-" + strings.TrimPrefix(name, "t-missing-")
	src, err := environments.Load(writeSpec(t, fmt.Sprintf("name: %s\nbase: shell\napt: [tree, %s]\n", name, missing), nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var ev events
	rec, built, err := r.m.Build(ctx, src, ev.add)
	t.Logf("error: %v", err)
	var be *environments.BuildError
	if built || !errors.As(err, &be) || be.Step != "apt" || !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("built %v, err %v", built, err)
	}
	if want := fmt.Sprintf("apt package %q not found", missing); be.Msg != want {
		t.Errorf("message %q, want %q", be.Msg, want)
	}
	if rec.Status != environments.StatusFailed || rec.FailedStep != "apt" || rec.Usable() || len(rec.LogTail) == 0 {
		t.Errorf("record %+v", rec)
	}
	if !slices.ContainsFunc(ev.all, func(e environments.Event) bool {
		return e.Step == environments.StepAptUpdate && strings.Contains(e.Line, " "+mirror+" ")
	}) {
		t.Errorf("apt-get update did not use the mirror %s", mirror)
	}
	if last := ev.all[len(ev.all)-1]; last.Type != environments.EventFailed || last.Step != "apt" || !strings.Contains(last.Error, missing) {
		t.Errorf("last event %+v", last)
	}
	assertNoImages(t, r.dc, name)
	made := r.made.created()
	if len(made) == 0 {
		t.Error("the build created no container")
	}
	if left := existing(t, r.dc, made); len(left) > 0 {
		t.Errorf("%d of the build's %d containers left: %.12v", len(left), len(made), left)
	}
	got, err := r.m.Get(ctx, name)
	if err != nil || got.Status != environments.StatusFailed || got.Error != be.Msg {
		t.Errorf("stored record %+v, %v", got, err)
	}
}
