package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/errdefs"
)

// Reap removes leftover Airlock containers: any past its expiry label, and
// any made on this host by a process that is no longer running (or by an
// earlier incarnation with our pid). It never touches containers of other
// live Airlock processes. It returns how many it removed.
func (e *Engine) Reap(ctx context.Context) (int, error) {
	list, err := e.docker.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))})
	if err != nil {
		return 0, fmt.Errorf("sandbox: reap: list containers: %w: %w", ErrUnavailable, err)
	}
	n := 0
	for _, c := range list {
		if !e.leftover(c.Labels) {
			continue
		}
		err := e.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !errdefs.IsNotFound(err) {
			e.log.Warn("reap: remove failed", "container", short(c.ID), "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// leftover decides from a container's labels whether it is abandoned.
func (e *Engine) leftover(l map[string]string) bool {
	if exp, err := strconv.ParseInt(l["airlock.expires"], 10, 64); err == nil && time.Now().Unix() > exp {
		return true
	}
	if l[LabelInstance] == e.cfg.Instance || l["airlock.host"] != e.host {
		return false
	}
	pid, err := strconv.Atoi(l["airlock.pid"])
	if err != nil || pid <= 0 {
		return true
	}
	return pid == os.Getpid() || !processAlive(pid)
}

// processAlive reports whether a process with this pid exists here.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}
