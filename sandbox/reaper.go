package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/core"
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
		return 0, fmt.Errorf("sandbox: reap: list containers: %w: %w", core.ErrUnavailable, err)
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

// leftover decides from a container's labels whether it is abandoned: past
// its expiry, or made on this host by a process incarnation (pid and start
// time) that no longer runs. Containers of other live processes, and of
// other engines in this process, are left alone.
func (e *Engine) leftover(l map[string]string) bool {
	if exp, err := strconv.ParseInt(l["airlock.expires"], 10, 64); err == nil && time.Now().Unix() > exp {
		return true
	}
	if l[LabelInstance] == e.cfg.Instance || l["airlock.host"] != e.host {
		return false
	}
	owner := l[labelProc]
	pid, _, ok := strings.Cut(owner, ":")
	if !ok {
		return true
	}
	n, err := strconv.Atoi(pid)
	return err != nil || procIdentity(n) != owner
}

// labelProc names the process incarnation that made a container.
const labelProc = "airlock.proc"

// procIdentity is "pid:starttime" of a running process, or "" when there is
// none: a pid reused by a later process gets another start time.
func procIdentity(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// Fields after the command name (which may hold spaces) start at ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return strconv.Itoa(pid) + ":" + f[19] // field 22: starttime
}

// LabelWorker names the queue worker whose jobs a container serves; a
// reaper on any host removes the container once that worker's liveness key
// is gone (see ReapDeadWorkers).
const LabelWorker = "airlock.worker"

// WorkerAliveFunc reports whether a queue worker is alive (its liveness
// key exists); an error means "unknown" and spares the container.
type WorkerAliveFunc func(ctx context.Context, worker string) (bool, error)

// ReapDeadWorkers removes Airlock containers on this Docker host whose
// LabelWorker names a worker that alive reports dead: containers of a
// worker on another host (or in a killed process) that no local reaper
// would judge. Each worker is asked once per sweep. It returns how many it
// removed.
func (e *Engine) ReapDeadWorkers(ctx context.Context, alive WorkerAliveFunc) (int, error) {
	list, err := e.docker.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelManaged+"=true"), filters.Arg("label", LabelWorker))})
	if err != nil {
		return 0, fmt.Errorf("sandbox: reap dead workers: list containers: %w: %w", core.ErrUnavailable, err)
	}
	verdict := map[string]bool{}
	n := 0
	for _, c := range list {
		w := c.Labels[LabelWorker]
		if w == "" || c.Labels[LabelInstance] == e.cfg.Instance {
			continue
		}
		dead, seen := verdict[w]
		if !seen {
			ok, err := alive(ctx, w)
			dead = err == nil && !ok
			verdict[w] = dead
		}
		if !dead {
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
