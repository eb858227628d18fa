package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-dev/airlock/sandbox"
)

// dockerRun is the baseline: `docker run --rm --network none IMAGE python3 -c CODE`.
func dockerRun(image, code string) []string {
	return []string{"docker", "run", "--rm", "--network", "none", image, "python3", "-c", code}
}

// dockerRunHardened is the baseline with the limits Airlock puts on every
// container (sandbox DefaultConfig), so the difference is Airlock's own cost.
func dockerRunHardened(image, code string) []string {
	return append(hardenedRunArgs(), image, "python3", "-c", code)
}

// hardenedRunArgs is `docker run --rm` with Airlock's container limits,
// up to (not including) the image.
func hardenedRunArgs() []string {
	d := sandbox.DefaultConfig().Defaults
	tmpfs := fmt.Sprintf("rw,nosuid,nodev,noexec,size=%d", d.TmpfsBytes)
	return []string{"docker", "run", "--rm", "--network", "none", "--read-only",
		"--cap-drop", "ALL", "--security-opt", "no-new-privileges:true", "--init", "--ipc", "private",
		"--user", sandbox.SandboxUser, "--memory", strconv.FormatInt(d.Memory, 10),
		"--memory-swap", strconv.FormatInt(d.Memory, 10), "--memory-swappiness", "0",
		"--cpus", strconv.FormatFloat(d.CPUs, 'f', -1, 64), "--pids-limit", strconv.FormatInt(d.Pids, 10),
		"--ulimit", fmt.Sprintf("nofile=%d:%d", d.NoFile, d.NoFile),
		"--ulimit", fmt.Sprintf("fsize=%d:%d", d.FileSize, d.FileSize), "--ulimit", "core=0:0",
		"--tmpfs", "/tmp:" + tmpfs + ",mode=1777",
		"--tmpfs", "/work:" + tmpfs + ",uid=10001,gid=10001,mode=0755",
		"--log-opt", "max-size=1m", "--log-opt", "max-file=1"}
}

// poolMem is one idle pooled container's memory as three sources see it.
type poolMem struct {
	id          string
	usage       int64  // cgroup usage (v1 usage_in_bytes includes page cache)
	rss         int64  // cgroup v1 total_rss / v2 anon
	dockerStats string // `docker stats` MemUsage (usage minus cache)
}

// poolMemory reads the memory of every pool container of an engine instance.
func poolMemory(ctx context.Context, instance string) ([]poolMem, error) {
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		return nil, err
	}
	defer dc.Close()
	list, err := dc.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
		filters.Arg("label", sandbox.LabelKind+"=pool"), filters.Arg("label", sandbox.LabelInstance+"="+instance))})
	if err != nil {
		return nil, err
	}
	var out []poolMem
	for _, c := range list {
		m := poolMem{id: c.ID}
		m.usage, m.rss = cgroupMemory(c.ID)
		if b, err := exec.CommandContext(ctx, "docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", c.ID).Output(); err == nil {
			m.dockerStats, _, _ = strings.Cut(strings.TrimSpace(string(b)), " /")
		}
		out = append(out, m)
	}
	return out, nil
}

// cgroupMemory reads a container's usage and anonymous memory from cgroup
// v1 (cgroupfs driver) or v2 (systemd or cgroupfs driver).
func cgroupMemory(id string) (usage, rss int64) {
	for _, dir := range []string{"/sys/fs/cgroup/memory/docker/" + id, "/sys/fs/cgroup/memory/system.slice/docker-" + id + ".scope"} {
		if u := readInt(dir + "/memory.usage_in_bytes"); u > 0 {
			return u, statField(dir+"/memory.stat", "total_rss")
		}
	}
	for _, dir := range []string{"/sys/fs/cgroup/system.slice/docker-" + id + ".scope", "/sys/fs/cgroup/docker/" + id} {
		if u := readInt(dir + "/memory.current"); u > 0 {
			return u, statField(dir+"/memory.stat", "anon")
		}
	}
	return 0, 0
}

// readInt reads a file holding one integer.
func readInt(path string) int64 {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return n
}

// statField reads "name value" from a memory.stat file.
func statField(path, name string) int64 {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// createWatch counts container creations, by airlock.kind, from a live
// event stream (the daemon's replay buffer is too short to ask afterwards
// on a busy machine).
type createWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	kinds  map[string]int
	err    error
}

// watchCreates starts counting creations of containers carrying label ("key=value").
func watchCreates(ctx context.Context, label string) (*createWatch, error) {
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &createWatch{cancel: cancel, done: make(chan struct{}), kinds: map[string]int{}}
	msgs, errs := dc.Events(ctx, events.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", "container"), filters.Arg("event", "create"), filters.Arg("label", label))})
	go func() {
		defer close(w.done)
		defer dc.Close()
		for {
			select {
			case m := <-msgs:
				w.kinds[m.Actor.Attributes[sandbox.LabelKind]]++
			case err := <-errs:
				if ctx.Err() == nil {
					w.err = err
				}
				return
			}
		}
	}()
	return w, nil
}

// stop ends the watch after a short grace for events in flight and returns the counts.
func (w *createWatch) stop() (map[string]int, error) {
	time.Sleep(200 * time.Millisecond)
	w.cancel()
	<-w.done
	return w.kinds, w.err
}
