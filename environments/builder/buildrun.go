package builder

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/environments"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-units"

	"github.com/airlock-dev/airlock/core"
)

// buildCaps are the only capabilities of the build container: what apt
// and dpkg need as root (own and chmod files, drop to the _apt user for
// downloads). No NET_RAW, MKNOD, SYS_* or anything else.
var buildCaps = []string{"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"}

// buildContainer is the locked-down container one build runs in: root in
// the build only, from the base image pinned by ID; the bridge network only
// when the plan needs the mirror or an index; no mounts (the context is
// copied in), no Docker socket, capabilities limited to buildCaps,
// no-new-privileges, bounded memory, CPU and pids. It carries no labels
// (a commit would copy them into the image): it removes itself when it
// exits, and it exits when the builder's attach goes away.
func (m *Manager) buildContainer(baseID string, p plan) (*container.Config, *container.HostConfig) {
	cfg := &container.Config{
		Image:           baseID,
		User:            "0:0",
		Cmd:             []string{"/bin/bash", buildDir + "/build.sh"},
		WorkingDir:      "/",
		NetworkDisabled: !p.network,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		OpenStdin:       true,
		StdinOnce:       true,
	}
	init := true
	pids := m.cfg.BuildPids
	network := "none"
	if p.network {
		network = "bridge"
	}
	host := &container.HostConfig{
		NetworkMode:  container.NetworkMode(network),
		AutoRemove:   true,
		CapDrop:      []string{"ALL"},
		CapAdd:       buildCaps,
		SecurityOpt:  []string{"no-new-privileges:true"},
		Init:         &init,
		IpcMode:      "private",
		CgroupnsMode: "private",
		LogConfig:    container.LogConfig{Type: "json-file", Config: map[string]string{"max-size": "1m", "max-file": "1"}},
		Resources: container.Resources{
			Memory:     m.cfg.BuildMemory,
			MemorySwap: m.cfg.BuildMemory,
			NanoCPUs:   int64(m.cfg.BuildCPUs * 1e9),
			PidsLimit:  &pids,
			Ulimits:    []*units.Ulimit{{Name: "core", Soft: 0, Hard: 0}},
		},
	}
	return cfg, host
}

// buildRun is one running build container.
type buildRun struct {
	m     *Manager
	id    string
	hj    types.HijackedResponse
	waitC <-chan container.WaitResponse
	errC  <-chan error
	lines chan string
	once  sync.Once
}

// startBuild creates the build container, copies the context in, attaches
// and starts it. On failure nothing is left behind.
func (m *Manager) startBuild(ctx context.Context, baseID string, p plan, tar []byte) (*buildRun, error) {
	cfg, host := m.buildContainer(baseID, p)
	created, err := m.docker.ContainerCreate(ctx, cfg, host, nil, nil, "")
	if err != nil {
		return nil, unavailable("create the build container", err)
	}
	r := &buildRun{m: m, id: created.ID}
	if err := m.docker.CopyToContainer(ctx, r.id, "/", bytes.NewReader(tar), container.CopyToContainerOptions{}); err != nil {
		m.removeContainer(r.id)
		return nil, unavailable("copy the build context", err)
	}
	if r.hj, err = m.docker.ContainerAttach(ctx, r.id, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true}); err != nil {
		m.removeContainer(r.id)
		return nil, unavailable("attach to the build container", err)
	}
	// Removed, not next-exit: the container removes itself after it
	// exits, and the build is over only once it is gone.
	r.waitC, r.errC = m.docker.ContainerWait(context.WithoutCancel(ctx), r.id, container.WaitConditionRemoved)
	if err := m.docker.ContainerStart(ctx, r.id, container.StartOptions{}); err != nil {
		r.hj.Close()
		m.removeContainer(r.id) // never started: nothing removes it but this
		return nil, unavailable("start the build container", err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, r.hj.Reader)
		pw.CloseWithError(err)
	}()
	r.lines = make(chan string, 64)
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		_ = pr.CloseWithError(io.EOF) // unblock the copier if the scanner stopped early
	}()
	return r, nil
}

// follow feeds the build's output to t until the script reached its end
// (ended: the container waits to be committed) or the container exited
// (the build failed with exit).
func (r *buildRun) follow(ctx context.Context, name string, t *tracker) (ended bool, exit int64, err error) {
	deadline := time.NewTimer(r.m.cfg.BuildTimeout)
	defer deadline.Stop()
	lines := r.lines
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			t.line(l)
			if t.ended {
				return true, 0, nil
			}
		case w := <-r.waitC:
			r.drain(lines, t)
			if w.Error != nil {
				return false, 0, unavailable("wait for the build container", fmt.Errorf("%s", w.Error.Message))
			}
			return t.ended, w.StatusCode, nil
		case err := <-r.errC:
			return false, 0, unavailable("wait for the build container", err)
		case <-deadline.C:
			return false, 0, &environments.BuildError{Name: name, Step: t.step, Msg: fmt.Sprintf("the build ran past its %s limit", r.m.cfg.BuildTimeout), Code: core.ErrDeadline}
		case <-ctx.Done():
			return false, 0, fmt.Errorf("environments: build of %s abandoned: %w", name, context.Cause(ctx))
		}
	}
}

// drain feeds the rest of the output to t once the container has exited;
// if the stream does not end within drainWait, it is closed.
func (r *buildRun) drain(lines <-chan string, t *tracker) {
	if lines == nil {
		return
	}
	timer := time.NewTimer(drainWait)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return
			}
			t.line(l)
		case <-timer.C:
			r.hj.Close()
		}
	}
}

// drainWait bounds the wait for the output after the build container exited.
const drainWait = 10 * time.Second

// stop ends the build: closing the attach closes the script's stdin (it
// kills everything and the container removes itself); its removal is
// waited for, and it is force-removed if it is still there after 30 s.
func (r *buildRun) stop() {
	r.once.Do(func() {
		r.hj.Close()
		select {
		case <-r.waitC:
		case <-r.errC:
		case <-time.After(30 * time.Second):
		}
		r.m.removeContainer(r.id)
	})
}

// removeContainer force-removes a build or check container, off ctx (a
// canceled build still cleans up); one already gone is fine.
func (m *Manager) removeContainer(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := m.docker.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && !errdefs.IsNotFound(err) && !errdefs.IsConflict(err) {
		m.log.Warn("environments: remove container failed", "container", id, "err", err)
	}
}

// unavailable is a Docker failure during a build.
func unavailable(what string, err error) error {
	return core.E("environments.build", core.ErrUnavailable, fmt.Errorf("%s: %w", what, err))
}
