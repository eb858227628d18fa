package sandbox

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
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
//
// It also removes the link folders under Config.LinkDir whose container
// is gone (sweepLinks): those of a process killed while one booted.
func (e *Engine) Reap(ctx context.Context) (int, error) {
	cutoff := time.Now().Add(-linkStale)
	list, err := e.docker.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelManaged+"=true"))})
	if err != nil {
		return 0, fmt.Errorf("sandbox: reap: list containers: %w: %w", core.ErrUnavailable, err)
	}
	n := 0
	live := map[string]bool{} // link ids of the containers left
	for _, c := range list {
		if !e.leftover(c.Labels) {
			live[c.Labels[LabelLink]] = true
			continue
		}
		err := e.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !errdefs.IsNotFound(err) {
			e.log.Warn("reap: remove failed", "container", short(c.ID), "err", err)
			live[c.Labels[LabelLink]] = true
			continue
		}
		n++
	}
	if k := e.sweepLinks(live, cutoff); k > 0 {
		e.log.Info("reap: removed stale link folders", "count", k)
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

// Labels of a queue worker's containers: LabelWorker names the worker
// whose jobs a container serves (the id its liveness key uses) and
// LabelQueue the queue it takes them from. A reaper on any host removes
// the container once that worker's liveness key is gone (ReapDeadWorkers).
const (
	LabelWorker = "airlock.worker"
	LabelQueue  = "airlock.queue"
)

// WorkerAliveFunc reports whether a queue worker is alive (its liveness
// key exists); an error means "unknown" and spares the container.
type WorkerAliveFunc func(ctx context.Context, worker string) (bool, error)

// ReapDeadWorkers removes the Airlock containers on this Docker host that
// serve a worker of queue which alive reports dead: containers of a worker
// on another host (or in a killed process) that no local reaper would
// judge. A worker is dead only once its liveness key has been missing on
// every sweep for at least confirm (so one missed refresh or a worker still
// starting is no death); an error from alive resets that. Containers of
// this engine, and those made on this host by a process that still runs,
// are never judged here. Each worker is asked once per sweep. It returns
// how many containers it removed.
func (e *Engine) ReapDeadWorkers(ctx context.Context, queue string, alive WorkerAliveFunc, confirm time.Duration) (int, error) {
	list, err := e.docker.ContainerList(ctx, container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", LabelManaged+"=true"), filters.Arg("label", LabelWorker),
			filters.Arg("label", LabelQueue+"="+queue))})
	if err != nil {
		return 0, fmt.Errorf("sandbox: reap dead workers: list containers: %w: %w", core.ErrUnavailable, err)
	}
	now := time.Now()
	verdict := map[string]bool{} // worker -> dead, once asked this sweep
	observed := map[string]bool{}
	n := 0
	for _, c := range list {
		w := c.Labels[LabelWorker]
		if w == "" || c.Labels[LabelManaged] != "true" || c.Labels[LabelQueue] != queue ||
			c.Labels[LabelInstance] == e.cfg.Instance || e.liveHere(c.Labels) {
			continue
		}
		dead, seen := verdict[w]
		if !seen {
			ok, err := alive(ctx, w)
			dead = e.deadWorkers.observe(w, err == nil && !ok, now, confirm)
			verdict[w], observed[w] = dead, true
		}
		if !dead {
			continue
		}
		err := e.docker.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !errdefs.IsNotFound(err) {
			e.log.Warn("reap: remove failed", "container", short(c.ID), "err", err)
			continue
		}
		e.log.Info("reaped a dead worker's container", "container", short(c.ID), "worker", w)
		n++
	}
	e.deadWorkers.retain(observed)
	return n, nil
}

// liveHere reports whether a container was made on this host by a process
// incarnation that still runs: that process (or its own dead man's switch)
// answers for it, whatever Redis says.
func (e *Engine) liveHere(l map[string]string) bool {
	if l["airlock.host"] != e.host {
		return false
	}
	pid, _, ok := strings.Cut(l[labelProc], ":")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(pid)
	return err == nil && procIdentity(n) == l[labelProc]
}

// SessionBoundFunc reports whether the session id of owner is still bound
// to this engine's worker (the queue routes its calls here); an error
// means "unknown" and spares the session.
type SessionBoundFunc func(ctx context.Context, owner, id string) (bool, error)

// ReapUnboundSessions ends the sessions nobody can reach any more: those
// bound reports unbound on every sweep for at least confirm (the queue
// declared them lost, or their binding expired or was never written). Their
// containers are removed. A session in use (a call, snapshot or restore
// running) or used within confirm counts as reachable: a wake opens the
// session and runs its call before the call's reply writes the binding. An
// error from bound resets a session's count. It returns how many sessions
// it ended.
func (e *Engine) ReapUnboundSessions(ctx context.Context, bound SessionBoundFunc, confirm time.Duration) int {
	s := e.sessions
	type seen struct {
		ss   *session
		used time.Time
	}
	s.mu.Lock()
	var live []seen
	ids := map[string]bool{}
	for id, ss := range s.live {
		if ss.box != nil {
			live = append(live, seen{ss, ss.info.LastUsed})
			ids[id] = true
		}
	}
	s.mu.Unlock()
	now := time.Now()
	n := 0
	for _, l := range live {
		ss := l.ss
		id, owner := ss.info.ID, ss.info.Owner // fixed once the session is live
		missing := ss.inUse.Load() == 0 && now.Sub(l.used) >= confirm
		if missing {
			ok, err := bound(ctx, owner, id)
			missing = err == nil && !ok && ss.inUse.Load() == 0
		}
		if !e.unbound.observe(id, missing, now, confirm) {
			continue
		}
		e.log.Info("session unbound: ending it and removing its container", "session", id, "owner", owner)
		s.end(ss)
		e.unbound.forget(id) // a wake may bring the id back; it starts afresh
		n++
	}
	e.unbound.retain(ids)
	return n
}

// missingSince remembers since when each key (a worker, a session) has been
// seen missing on consecutive observations.
type missingSince struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

// observe records one observation of key at now and reports whether key has
// been missing on every observation for at least after (at once when after
// is 0). An observation that is not missing clears the record.
func (m *missingSince) observe(key string, missing bool, now time.Time, after time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !missing {
		delete(m.seen, key)
		return false
	}
	if m.seen == nil {
		m.seen = map[string]time.Time{}
	}
	first, ok := m.seen[key]
	if !ok {
		m.seen[key], first = now, now
	}
	return now.Sub(first) >= after
}

// forget drops key's record.
func (m *missingSince) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.seen, key)
}

// retain forgets every key not in keep (no longer observed).
func (m *missingSince) retain(keep map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.seen {
		if !keep[k] {
			delete(m.seen, k)
		}
	}
}
