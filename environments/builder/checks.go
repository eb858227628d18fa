package builder

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/environments"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-units"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/sandbox"
)

// Runner runs sandbox calls: *sandbox.Engine. The checks run the image's
// own controller and commands through it, with every hardening setting of
// a real call (no network, read-only root, no capabilities, its own uid).
type Runner interface {
	Exec(ctx context.Context, req core.Request) (core.Result, error)
	Close(ctx context.Context) error
}

// RunnerFunc returns a Runner whose calls may name image (core.Request.Image).
type RunnerFunc func(image string) (Runner, error)

// SandboxRunners returns a RunnerFunc that makes a sandbox engine with
// cfg's settings and image as its only image, without warm containers:
// each check call gets a fresh container, removed after it.
func SandboxRunners(docker sandbox.DockerAPI, cfg sandbox.Config, log *slog.Logger) RunnerFunc {
	return func(image string) (Runner, error) {
		c := cfg
		c.Images = map[core.Language]string{core.Python: image, core.Shell: image}
		c.PoolSize, c.SingleUse, c.Metrics = 0, true, nil
		return sandbox.New(c, docker, log), nil
	}
}

// checkLimits bound every check call: enough for a slow import on a busy
// machine, within the sandbox's default maximums.
var checkLimits = core.Limits{Memory: 1 << 30, CPUs: 1, Pids: 256, Timeout: 2 * time.Minute}

// checkOwner is the owner of check calls (no API key has it).
const checkOwner = "airlock-environment-check"

// baseInfo is the inspected base image of a build.
type baseInfo struct {
	name   string // python or shell
	ref    string // the configured reference, e.g. airlock/python:latest
	id     string
	size   int64
	env    []string
	labels map[string]string
}

// runner is the base's controller path ("" when it has none).
func (b baseInfo) runner() string { return b.labels["airlock.runner"] }

// checkImage runs every check on the committed image id and returns their
// outcomes; a failed one makes an environments.BuildError naming it.
func (m *Manager) checkImage(ctx context.Context, name, id string, base baseInfo, spec environments.Spec, t *tracker) ([]environments.Check, error) {
	var checks []environments.Check
	add := func(c environments.Check) {
		checks = append(checks, c)
		line := "check " + c.Name + ": ok"
		if !c.OK {
			line = "check " + c.Name + ": FAILED"
		}
		if c.Detail != "" {
			line += " (" + c.Detail + ")"
		}
		t.line(line)
	}
	info, err := m.docker.ImageInspect(ctx, id)
	if err != nil {
		return nil, unavailable("inspect the new image", err)
	}
	add(imageConfigCheck(info.Config, base))
	sc, err := m.setuidCheck(ctx, id)
	if err != nil {
		return nil, err
	}
	add(sc)
	r, err := m.runners(id)
	if err != nil {
		return nil, unavailable("start the check sandbox", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = r.Close(cctx)
	}()
	cs, err := runtimeChecks(ctx, r, id, base, spec)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		add(c)
	}
	added := info.Size - base.size
	add(environments.Check{Name: "size", OK: true, Detail: fmt.Sprintf("%s (%s over the %s base)", units.HumanSize(float64(info.Size)), units.HumanSize(float64(added)), base.name)})
	for _, c := range checks {
		if !c.OK {
			return checks, &environments.BuildError{Name: name, Step: environments.StepChecks, Msg: fmt.Sprintf("check %s: %s", c.Name, c.Detail), Code: core.ErrInvalid}
		}
	}
	return checks, nil
}

// imageConfigCheck refuses an image that would not run as the sandbox
// user, has an entrypoint or another command, or lost or changed its
// controller label.
func imageConfigCheck(cfg *dockerspec.DockerOCIImageConfig, base baseInfo) environments.Check {
	c := environments.Check{Name: "image"}
	switch {
	case cfg == nil:
		c.Detail = "the image has no configuration"
	case cfg.User != sandbox.SandboxUser:
		c.Detail = fmt.Sprintf("the image user is %q, not the sandbox user %s", cfg.User, sandbox.SandboxUser)
	case len(cfg.Entrypoint) > 0:
		c.Detail = fmt.Sprintf("the image has an entrypoint %q", cfg.Entrypoint)
	case !slices.Equal(cfg.Cmd, []string{"/bin/bash"}):
		c.Detail = fmt.Sprintf("the image command is %q, not /bin/bash", cfg.Cmd)
	case cfg.Labels["airlock.runner"] != base.runner():
		c.Detail = fmt.Sprintf("the controller label is %q, the base's is %q", cfg.Labels["airlock.runner"], base.runner())
	default:
		c.OK, c.Detail = true, "user "+sandbox.SandboxUser+", no entrypoint"
	}
	return c
}

// setuidCheck lists every setuid or setgid file of the image with the
// image's find run as root with no capability but DAC_READ_SEARCH (to see
// into every folder), no network and a read-only root.
func (m *Manager) setuidCheck(ctx context.Context, id string) (environments.Check, error) {
	pids := int64(64)
	cfg := &container.Config{
		Image:           id,
		User:            "0:0",
		Entrypoint:      []string{"/usr/bin/find"},
		Cmd:             []string{"/", "-xdev", "-perm", "/6000", "-type", "f", "-print"},
		Labels:          sandbox.OwnedLabels("envcheck", 10*time.Minute),
		NetworkDisabled: true,
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		CapAdd:         []string{"DAC_READ_SEARCH"},
		SecurityOpt:    []string{"no-new-privileges:true"},
		IpcMode:        "private",
		LogConfig:      container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "1m", "max-file": "1"}},
		Resources:      container.Resources{Memory: 256 << 20, MemorySwap: 256 << 20, NanoCPUs: 1e9, PidsLimit: &pids},
	}
	created, err := m.docker.ContainerCreate(ctx, cfg, host, nil, nil, "")
	if err != nil {
		return environments.Check{}, unavailable("create the setuid check container", err)
	}
	defer m.removeContainer(created.ID)
	waitC, errC := m.docker.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := m.docker.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return environments.Check{}, unavailable("start the setuid check container", err)
	}
	var exit int64
	select {
	case w := <-waitC:
		exit = w.StatusCode
	case err := <-errC:
		return environments.Check{}, unavailable("wait for the setuid check", err)
	}
	rc, err := m.docker.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		return environments.Check{}, unavailable("read the setuid check", err)
	}
	defer rc.Close()
	var out, errOut bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errOut, io.LimitReader(rc, 1<<20)); err != nil {
		return environments.Check{}, unavailable("read the setuid check", err)
	}
	c := environments.Check{Name: "setuid"}
	files := strings.Fields(out.String())
	slices.Sort(files)
	switch {
	case len(files) > 0:
		if len(files) > 10 {
			files = append(files[:10], fmt.Sprintf("and %d more", len(files)-10))
		}
		c.Detail = "setuid/setgid files: " + strings.Join(files, ", ")
	case exit != 0:
		c.Detail = fmt.Sprintf("find exited %d: %s", exit, lastLine(errOut.String()))
	default:
		c.OK, c.Detail = true, "no setuid or setgid file"
	}
	return c, nil
}

// probeResult is what the controller probe reports.
type probeResult struct {
	PID1    []string          `json:"pid1"`
	RootPID []string          `json:"root_pids"`
	Imports map[string]string `json:"imports"`
}

// probeCode is the Python the controller check runs: pid 1's command
// line, the processes running as root, and each declared module's import.
const probeCode = `import importlib, json, os
pid1 = [c.decode(errors="replace") for c in open("/proc/1/cmdline", "rb").read().split(b"\0") if c]
root = []
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            for line in open("/proc/%s/status" % p):
                if line.startswith("Uid:") and "0" in line.split()[1:]:
                    root.append(p)
        except OSError:
            pass
imports = {}
for m in MODULES:
    try:
        importlib.import_module(m)
    except BaseException as e:
        imports[m] = "%s: %s" % (type(e).__name__, e)
print(MARK + json.dumps({"pid1": pid1, "root_pids": root, "imports": imports}))
`

// runtimeChecks runs the image in the sandbox: the controller is pid 1
// and answers, no process runs as root, every declared module imports
// (one call), every declared command exits 0 (one call each).
func runtimeChecks(ctx context.Context, r Runner, id string, base baseInfo, spec environments.Spec) ([]environments.Check, error) {
	var out []environments.Check
	call := func(lang core.Language, code string) (core.Result, error) {
		res, err := r.Exec(ctx, core.Request{Language: lang, Code: code, Image: id, Owner: checkOwner, Limits: checkLimits})
		if err != nil {
			return res, fmt.Errorf("environments: check call: %w", err)
		}
		return res, nil
	}
	if base.runner() != "" {
		mark := "@@probe-" + nonce() + " "
		mods, _ := json.Marshal(append([]string{}, spec.CheckImports...)) // [] not null: a shell base has the controller too
		code := "MODULES = " + string(mods) + "\nMARK = " + fmt.Sprintf("%q", mark) + "\n" + probeCode
		res, err := call(core.Python, code)
		if err != nil {
			return nil, err
		}
		out = append(out, probeChecks(res, mark, base.runner(), spec.CheckImports)...)
	} else {
		res, err := call(core.Shell, `awk '/^Uid:/ { for (i = 2; i <= 5; i++) if ($i == 0) { print FILENAME; break } }' /proc/[0-9]*/status`)
		if err != nil {
			return nil, err
		}
		c := environments.Check{Name: "processes", OK: res.Status == core.StatusOK && strings.TrimSpace(res.Stdout) == ""}
		c.Detail = "no process runs as root (the shell base has no controller)"
		if !c.OK {
			c.Detail = "root processes or a failed probe: " + resultDetail(res)
		}
		out = append(out, c)
	}
	for _, cmd := range spec.CheckCommands {
		res, err := call(core.Shell, cmd)
		if err != nil {
			return nil, err
		}
		c := environments.Check{Name: fmt.Sprintf("command %q", cmd), OK: res.Status == core.StatusOK}
		if c.OK {
			c.Detail = "exit 0"
		} else {
			c.Detail = resultDetail(res)
		}
		out = append(out, c)
	}
	return out, nil
}

// probeChecks reads the controller probe's answer.
func probeChecks(res core.Result, mark, runner string, modules []string) []environments.Check {
	var p probeResult
	found := false
	for _, l := range strings.Split(res.Stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, mark); ok {
			found = json.Unmarshal([]byte(rest), &p) == nil
		}
	}
	ctl := environments.Check{Name: "controller"}
	switch {
	case res.Status != core.StatusOK || !found:
		ctl.Detail = "the probe through the controller failed: " + resultDetail(res)
		return []environments.Check{ctl}
	case !slices.Contains(p.PID1, runner):
		ctl.Detail = fmt.Sprintf("pid 1 is %q, not the controller %s", strings.Join(p.PID1, " "), runner)
	default:
		ctl.OK, ctl.Detail = true, "pid 1 is "+runner+" and answers"
	}
	procs := environments.Check{Name: "processes", OK: len(p.RootPID) == 0, Detail: "no process runs as root"}
	if !procs.OK {
		procs.Detail = "processes running as root: " + strings.Join(p.RootPID, ", ")
	}
	out := []environments.Check{ctl, procs}
	if len(modules) > 0 {
		imp := environments.Check{Name: "imports", OK: len(p.Imports) == 0, Detail: strings.Join(modules, ", ") + " import"}
		if !imp.OK {
			var bad []string
			for _, m := range modules {
				if e, ok := p.Imports[m]; ok {
					bad = append(bad, fmt.Sprintf("module %q does not import (%s)", m, e))
				}
			}
			imp.Detail = strings.Join(bad, "; ")
		}
		out = append(out, imp)
	}
	return out
}

// resultDetail summarizes a failed check call.
func resultDetail(res core.Result) string {
	d := fmt.Sprintf("status %s, exit %d", res.Status, res.ExitCode)
	if res.Message != "" {
		d += ": " + res.Message
	}
	if l := lastLine(res.Stderr); l != "" {
		d += ": " + l
	} else if l := lastLine(res.Stdout); l != "" {
		d += ": " + l
	}
	return d
}

// lastLine is the last non-empty line of s, bounded.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 300 {
		l = l[:300] + "…"
	}
	return l
}

// nonce is a random marker no build or check output can guess.
func nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
