package hosts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"

	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/environments/builder"
)

// DockerAPI lists the Docker calls a Holder makes itself (the builder
// makes its own). *client.Client satisfies it.
type DockerAPI interface {
	ImageInspect(ctx context.Context, imageID string, inspectOpts ...client.ImageInspectOption) (image.InspectResponse, error)
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
}

// Builder builds an environment's source into an image on this host
// (*builder.Manager).
type Builder interface {
	Materialize(ctx context.Context, src environments.Source, hash, tag string, emit environments.EventFunc) (bool, error)
}

// Config tunes a Holder.
type Config struct {
	// Namespace, when set, makes this holder's tags airlock/env-NAME.NS:HASH
	// instead of airlock/env-NAME:HASH, so workers sharing one Docker
	// daemon can hold different images. [a-z0-9] only.
	Namespace string
	// Refresh is how long the list of held images is cached (default 5s).
	Refresh time.Duration
	// BuildTimeout bounds one build (default 30 min).
	BuildTimeout time.Duration
}

// Holder knows the environment images this host holds and builds the
// ones it lacks. It is safe for concurrent use.
type Holder struct {
	cfg    Config
	docker DockerAPI
	build  Builder
	reg    *environments.Registry
	log    *slog.Logger
	// onHeld is called after a build made a new image (may be nil).
	onHeld func()

	mu   sync.Mutex
	held map[string]bool // hashes
	// marked is when each hash was last built or found here, so a
	// listing that began before a build ended does not forget it.
	marked map[string]time.Time
	listed time.Time
	// refreshing is set while a background refresh runs.
	refreshing bool
	flights    map[string]*flight // by tag
}

// flight is one build in progress; done closes when it ends.
type flight struct {
	done chan struct{}
	err  error
}

// New returns a Holder over docker, building with b from the sources in
// reg. log may be nil.
func New(cfg Config, docker DockerAPI, b Builder, reg *environments.Registry, log *slog.Logger) (*Holder, error) {
	for _, r := range cfg.Namespace {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') {
			return nil, fmt.Errorf("environments: image namespace %q: only a-z and 0-9", cfg.Namespace)
		}
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 5 * time.Second
	}
	if cfg.BuildTimeout <= 0 {
		cfg.BuildTimeout = 30 * time.Minute
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Holder{cfg: cfg, docker: docker, build: b, reg: reg, log: log, held: map[string]bool{}, marked: map[string]time.Time{}, flights: map[string]*flight{}}, nil
}

// OnHeld sets f to run after a build made a new image here (the worker
// advertises it at once: queue.Advertise).
func (h *Holder) OnHeld(f func()) { h.onHeld = f }

// repo is this holder's repository of environment name's images.
func (h *Holder) repo(name string) string {
	if h.cfg.Namespace == "" {
		return builder.ImageRepo(name)
	}
	return builder.ImageRepo(name) + "." + h.cfg.Namespace
}

// Tag is this holder's tag of environment name's image hash.
func (h *Holder) Tag(name, hash string) string { return h.repo(name) + ":" + hash }

// Held returns the hashes of the environment images this host holds
// under its namespace. It never waits for Docker (the queue's heartbeat
// calls it): the first call lists the images, later ones answer from the
// list and refresh it in the background when it is older than
// Config.Refresh (an error keeps the last list).
func (h *Holder) Held() []string {
	h.mu.Lock()
	first := h.listed.IsZero() && !h.refreshing
	stale := !first && time.Since(h.listed) >= h.cfg.Refresh && !h.refreshing
	if stale {
		h.refreshing = true
	}
	h.mu.Unlock()
	switch {
	case first:
		h.refresh()
	case stale:
		go func() {
			h.refresh()
			h.mu.Lock()
			h.refreshing = false
			h.mu.Unlock()
		}()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.held))
	for k := range h.held {
		out = append(out, k)
	}
	return out
}

// refresh lists the images labelled as environments and keeps the hashes
// of those tagged in this holder's repositories.
func (h *Holder) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	list, err := h.docker.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", builder.LabelEnvironment))})
	if err != nil {
		h.log.Warn("environments: list the images held here", "err", err)
		h.mu.Lock()
		h.listed = time.Now() // retried after Refresh
		h.mu.Unlock()
		return
	}
	held := map[string]bool{}
	for _, im := range list {
		name := im.Labels[builder.LabelEnvironment]
		for _, t := range im.RepoTags {
			repo, tag, ok := strings.Cut(t, ":")
			if ok && name != "" && repo == h.repo(name) {
				held[tag] = true
			}
		}
	}
	h.mu.Lock()
	for k, at := range h.marked {
		if at.After(began) {
			held[k] = true
		}
	}
	h.held, h.listed = held, time.Now()
	h.mu.Unlock()
}

// Ensure returns this host's image of environment name's image hash,
// building it first from the stored source when this host lacks it;
// built reports that this call waited for a build. emit gets the build's
// events (only the call that started the build gets its steps; the
// others get one event saying they wait for it).
func (h *Holder) Ensure(ctx context.Context, name, hash string, emit environments.EventFunc) (tag string, built bool, err error) {
	if emit == nil {
		emit = func(environments.Event) {}
	}
	tag = h.Tag(name, hash)
	h.mu.Lock()
	known := h.held[hash]
	h.mu.Unlock()
	if known {
		return tag, false, nil
	}
	if _, err := h.docker.ImageInspect(ctx, tag); err == nil {
		h.mark(hash)
		return tag, false, nil
	} else if !errdefs.IsNotFound(err) {
		return "", false, fmt.Errorf("environments: inspect %s: %w", tag, err)
	}
	h.mu.Lock()
	f, running := h.flights[tag]
	if !running {
		f = &flight{done: make(chan struct{})}
		h.flights[tag] = f
		go h.run(name, hash, tag, f, emit)
	}
	h.mu.Unlock()
	if running {
		emit(environments.Event{Type: environments.EventStep, Time: time.Now(), Step: environments.StepPrepare,
			Line: fmt.Sprintf("waiting for the build of %s on this worker", name)})
	}
	select {
	case <-f.done:
	case <-ctx.Done():
		return "", false, fmt.Errorf("environments: waiting for the build of %s: %w", name, context.Cause(ctx))
	}
	if f.err != nil {
		return "", false, f.err
	}
	return tag, true, nil
}

// run builds one image from its stored source. The build runs under its
// own timeout, not the first caller's context: other calls wait for it.
func (h *Holder) run(name, hash, tag string, f *flight, emit environments.EventFunc) {
	defer func() {
		h.mu.Lock()
		delete(h.flights, tag)
		h.mu.Unlock()
		close(f.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.BuildTimeout)
	defer cancel()
	start := time.Now()
	src, err := h.reg.LoadSource(ctx, name, hash)
	if err != nil {
		f.err = err
		return
	}
	h.log.Info("environments: building an environment this worker lacks, from its stored source", "env", name, "hash", hash, "tag", tag)
	var mu sync.Mutex
	safe := func(ev environments.Event) {
		mu.Lock()
		defer mu.Unlock()
		emit(ev)
	}
	if _, err := h.build.Materialize(ctx, src, hash, tag, safe); err != nil {
		var be *environments.BuildError
		if !errors.As(err, &be) {
			err = fmt.Errorf("environments: build %s on this worker: %w", name, err)
		}
		f.err = err
		h.log.Warn("environments: build failed", "env", name, "err", err)
		return
	}
	h.log.Info("environments: built", "env", name, "tag", tag, "seconds", time.Since(start).Seconds())
	h.mark(hash)
	if h.onHeld != nil {
		h.onHeld()
	}
}

// mark records that this host holds hash.
func (h *Holder) mark(hash string) {
	h.mu.Lock()
	h.held[hash] = true
	h.marked[hash] = time.Now()
	h.mu.Unlock()
}
