package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"
)

// Engine runs requests in sandbox containers. It is safe for concurrent use.
type Engine struct {
	cfg      Config
	docker   DockerAPI
	log      *slog.Logger
	host     string
	proc     string // this process's identity, for the reaper
	mu       sync.Mutex
	runners  map[string]imageInfo // image -> what its labels say (checked once)
	pools    map[poolKey]*pool
	doors    map[string]*egress.Door // container id -> its egress door (egress.go)
	sessions *sessions
	bg       sync.WaitGroup // janitors and pool refills
	removals sync.WaitGroup // containers being removed
	// removeMu orders removals against Close: once closing is set, Close
	// waits on removals and a new removal runs on its caller instead
	// (a WaitGroup must not grow from zero while it is waited on).
	removeMu sync.Mutex
	closing  bool
	stop     chan struct{}
	stopOnce sync.Once
	metrics  *metrics
	warm     *warmBudget  // Limits.Memory summed over warm containers (idle, booting or being removed), within WarmMemoryBudget
	outMem   atomic.Int64 // Limits.Memory summed over pooled containers out on calls, of every pool
	// uids gives each live container its own uid (issue 10, uid.go).
	uids *uidAllocator
	// deadWorkers and unbound remember, between reaper sweeps, since when
	// a worker's liveness key or a session's binding was seen missing.
	deadWorkers, unbound missingSince
	// ownLinkDir is the link folder the engine made itself (no
	// Config.LinkDir; link.go), removed on Close.
	ownLinkDir string
	// linkPeer checks who connected to a container's link (checkLinkPeer;
	// unit tests, whose fake controller is this process, replace it).
	linkPeer func(ctx context.Context, conn *net.UnixConn, id string, uid int) error
}

// New builds an Engine. It does not contact the daemon; call Ping or Reap
// to check it, and Start to begin pools and background reaping.
func New(cfg Config, docker DockerAPI, log *slog.Logger) *Engine {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	def := DefaultConfig()
	if cfg.Images == nil {
		cfg.Images = def.Images
	}
	if cfg.Defaults == (core.Limits{}) {
		cfg.Defaults = def.Defaults
	}
	if cfg.Max == (core.Limits{}) {
		cfg.Max = def.Max
	}
	if cfg.MaxCodeBytes == 0 {
		cfg.MaxCodeBytes = def.MaxCodeBytes
	}
	if cfg.MaxFileBytes == 0 {
		cfg.MaxFileBytes = def.MaxFileBytes
	}
	if cfg.MaxArtifacts == 0 {
		cfg.MaxArtifacts = def.MaxArtifacts
	}
	if cfg.MaxArtifactBytes == 0 {
		cfg.MaxArtifactBytes = def.MaxArtifactBytes
	}
	if cfg.InterruptGrace == 0 {
		cfg.InterruptGrace = def.InterruptGrace
	}
	if cfg.SessionMaxLife == 0 {
		cfg.SessionMaxLife = def.SessionMaxLife
	}
	if cfg.SessionIdle == 0 {
		cfg.SessionIdle = def.SessionIdle
	}
	if cfg.PoolMax == 0 {
		cfg.PoolMax = max(cfg.PoolSize, 4)
	}
	if cfg.WarmMemoryBudget == 0 {
		cfg.WarmMemoryBudget = def.WarmMemoryBudget
	}
	if cfg.OwnerIdle == 0 {
		cfg.OwnerIdle = def.OwnerIdle
	}
	if cfg.InputMaxBytes <= 0 {
		cfg.InputMaxBytes = def.InputMaxBytes
	}
	if cfg.InputMaxEntries <= 0 {
		cfg.InputMaxEntries = def.InputMaxEntries
	}
	if cfg.HardOutputBytes == 0 {
		cfg.HardOutputBytes = def.HardOutputBytes
	}
	if cfg.Instance == "" {
		cfg.Instance = newID()
	}
	host, _ := os.Hostname()
	e := &Engine{cfg: cfg, docker: docker, log: log, host: host, proc: procIdentity(os.Getpid()),
		runners: map[string]imageInfo{}, pools: map[poolKey]*pool{}, doors: map[string]*egress.Door{}, stop: make(chan struct{}), metrics: newMetrics(cfg.Metrics)}
	e.sessions = newSessions(e)
	e.warm = &warmBudget{limit: e.cfg.WarmMemoryBudget, onChange: func(n int64) { e.metrics.warmMemory.Set(float64(n)) }}
	// Issue 10: one uid per container from cfg.UIDRange (uid.go).
	if e.cfg.UIDRange == (IDRange{}) {
		e.cfg.UIDRange = DefaultUIDRange
	}
	e.uids = newUIDAllocator(e.cfg.UIDRange)
	e.linkPeer = e.checkLinkPeer
	return e
}

// Config returns the engine's configuration (with defaults filled in).
func (e *Engine) Config() Config { return e.cfg }

// Ping checks that the Docker daemon answers.
func (e *Engine) Ping(ctx context.Context) error {
	if _, err := e.docker.Ping(ctx); err != nil {
		return fmt.Errorf("sandbox: docker daemon: %w: %w", core.ErrUnavailable, err)
	}
	return nil
}

// Start reaps leftovers, fills the warm pools and starts the background
// janitors. It returns once the first reap is done; pools fill in the background.
func (e *Engine) Start(ctx context.Context) error {
	if _, err := e.Reap(ctx); err != nil {
		return err
	}
	if e.cfg.PoolSize > 0 {
		for _, lang := range []core.Language{core.Python, core.Shell} {
			img := e.cfg.Images[lang]
			if err := e.requireController(ctx, img, ""); err != nil {
				return err
			}
			e.poolFor(poolKey{image: img}, e.cfg.PoolSize)
		}
	}
	e.goBackground(func() { e.sessions.janitor(e.stop) })
	if e.cfg.ReapInterval > 0 {
		e.goBackground(func() {
			t := time.NewTicker(e.cfg.ReapInterval)
			defer t.Stop()
			for {
				select {
				case <-e.stop:
					return
				case <-t.C:
					if n, err := e.Reap(context.Background()); err != nil {
						e.log.Warn("reap failed", "err", err)
					} else if n > 0 {
						e.log.Info("reaped leftover containers", "count", n)
					}
				}
			}
		})
	}
	return nil
}

// Close drains the pools, ends every session and waits for containers to
// be removed.
func (e *Engine) Close(ctx context.Context) error {
	e.stopOnce.Do(func() { close(e.stop) })
	e.sessions.shutdown()
	e.sessions.closeAll()
	e.mu.Lock()
	pools := e.pools
	e.pools = map[poolKey]*pool{}
	e.mu.Unlock()
	for _, p := range pools {
		p.drain()
	}
	e.removeMu.Lock()
	e.closing = true
	e.removeMu.Unlock()
	done := make(chan struct{})
	go func() { e.bg.Wait(); e.removals.Wait(); close(done) }()
	select {
	case <-done:
		e.removeOwnLinkDir()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sandbox: close: %w", ctx.Err())
	}
}

func (e *Engine) goBackground(f func()) {
	e.bg.Add(1)
	go func() { defer e.bg.Done(); f() }()
}

// labels marks a container as Airlock's, with an expiry after which any
// reaper may remove it, and with the queue worker it serves, if any.
func (e *Engine) labels(kind, job, owner string, life time.Duration) map[string]string {
	l := labels(kind, job, owner, e.cfg.Instance)
	l["airlock.host"] = e.host
	l["airlock.pid"] = strconv.Itoa(os.Getpid())
	l[labelProc] = e.proc
	l["airlock.expires"] = strconv.FormatInt(time.Now().Add(life).Unix(), 10)
	if e.cfg.Worker != "" {
		l[LabelWorker], l[LabelQueue] = e.cfg.Worker, e.cfg.Queue
	}
	return l
}

// createStarted creates a container and starts it; its controller then
// connects to the link s.Link names (acceptLink). On failure nothing is
// left behind. It returns the uid the container runs as.
func (e *Engine) createStarted(ctx context.Context, s containerSpec) (string, int, error) {
	release, err := e.assignIdentity(&s)
	if err != nil {
		return "", 0, err
	}
	cfg, host := s.build()
	created, err := e.docker.ContainerCreate(ctx, cfg, host, nil, nil, "")
	if err != nil {
		release()
		if errdefs.IsNotFound(err) {
			return "", 0, fmt.Errorf("sandbox: create from %s: %w: build it with `make images`", s.Image, ErrImageMissing)
		}
		if lerr := unseenLink(err, s.Link); lerr != nil {
			return "", 0, fmt.Errorf("sandbox: create from %s: %w", s.Image, lerr)
		}
		return "", 0, fmt.Errorf("sandbox: create from %s: %w: %w", s.Image, core.ErrUnavailable, err)
	}
	e.uids.bind(s.Identity.UID, created.ID)
	if err := e.docker.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		e.destroy(created.ID, nil, nil)
		if lerr := unseenLink(err, s.Link); lerr != nil {
			return "", 0, fmt.Errorf("sandbox: start %s: %w", short(created.ID), lerr)
		}
		return "", 0, fmt.Errorf("sandbox: start %s: %w: %w", short(created.ID), core.ErrUnavailable, err)
	}
	return created.ID, s.Identity.UID, nil
}

// destroy removes a container off the caller's path (on it once Close is
// waiting for the removals), then runs gone (if set). conn, the
// container's link, is closed first: its controller exits at once.
func (e *Engine) destroy(id string, conn *net.UnixConn, gone func()) {
	if conn != nil {
		_ = conn.Close()
	}
	remove := func() {
		e.removeNow(id)
		if gone != nil {
			gone()
		}
	}
	e.removeMu.Lock()
	closing := e.closing
	if !closing {
		e.removals.Add(1)
	}
	e.removeMu.Unlock()
	if closing { // Close is waiting: remove on this path
		remove()
		return
	}
	go func() {
		defer e.removals.Done()
		remove()
	}()
}

// removeWait bounds how long removeNow waits out dockerd's own removal of a
// container (AutoRemove, once its controller exited): meanwhile a forced
// removal is refused as a conflict, and on a busy machine with
// fuse-overlayfs that removal takes seconds. removeAttempts bounds the
// tries after any other error (the daemon unreachable); removePause is the
// first pause between tries, growing to five times that.
const (
	removeWait     = 2 * time.Minute
	removeAttempts = 10
	removePause    = 200 * time.Millisecond
)

// removeNow force-removes a container, retrying; a removal already in
// progress (AutoRemove) is waited for until the container is gone.
func (e *Engine) removeNow(id string) {
	e.removeUntil(id, time.Now().Add(removeWait), removePause)
}

// removeUntil is removeNow with its deadline for a removal in progress and
// its first pause.
func (e *Engine) removeUntil(id string, deadline time.Time, pause time.Duration) {
	failed := 0
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := e.docker.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
		cancel()
		if err == nil || errdefs.IsNotFound(err) {
			e.uids.removed(id)
			e.closeDoor(id)
			return
		}
		if !errdefs.IsConflict(err) {
			e.log.Warn("remove container failed", "container", short(id), "err", err)
			if failed++; failed >= removeAttempts {
				return
			}
		} else if time.Now().After(deadline) {
			e.log.Warn("remove container: its removal is still in progress", "container", short(id), "waited", removeWait)
			return
		}
		time.Sleep(time.Duration(min(try, 5)) * pause)
	}
}

// Settle blocks until every container scheduled for removal is gone.
func (e *Engine) Settle() { e.removals.Wait() }

func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// isRefusal reports whether err refuses bad input rather than reporting a
// platform failure.
func isRefusal(err error) bool {
	return errors.Is(err, core.ErrInvalid) || errors.Is(err, core.ErrTooLarge)
}
