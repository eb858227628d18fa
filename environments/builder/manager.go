package builder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/airlock-dev/airlock/environments"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/errdefs"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// Image labels of an environment's image.
const (
	LabelEnvironment = "airlock.environment"      // the environment's name
	LabelHash        = "airlock.environment.hash" // its content hash
	LabelBase        = "airlock.environment.base" // python or shell
	LabelPackages    = "airlock.environment.packages"
)

// ImageRepo is the repository of an environment's images: airlock/env-NAME.
func ImageRepo(name string) string { return "airlock/env-" + name }

// Config is what the operator decides for every build.
type Config struct {
	// Bases maps python and shell to their images (tags or IDs), the
	// built-in environments; builds pin the image ID they resolve to.
	Bases map[string]string
	// Mirror is the Debian mirror apt uses ("" keeps the base image's,
	// the mirror images/build.sh bootstrapped it from).
	Mirror string
	// IndexURL is the operator's package index for specs whose pip
	// requirements name none ("" for none: such specs need a wheelhouse).
	IndexURL string
	// BuildTimeout bounds one build container's run (default 30 min).
	BuildTimeout time.Duration
	// BuildMemory, BuildCPUs and BuildPids bound the build container
	// (defaults 2 GiB, 2, 1024).
	BuildMemory int64
	BuildCPUs   float64
	BuildPids   int64
	// Retire, when set, retires the idle warm containers of environment
	// name (sandbox.Engine.DropEnvironment) and returns how many: Remove
	// calls it first, so an idle container does not hold the image.
	Retire func(name string) int
}

// DefaultConfig returns the defaults: the built-in images by their
// latest tags.
func DefaultConfig() Config {
	return Config{
		Bases:        map[string]string{environments.Python: "airlock/python:latest", environments.Shell: "airlock/shell:latest"},
		BuildTimeout: 30 * time.Minute,
		BuildMemory:  2 << 30,
		BuildCPUs:    2,
		BuildPids:    1024,
	}
}

// Manager builds, checks, lists and removes environments: images in the
// local Docker daemon, records in the state store.
type Manager struct {
	cfg      Config
	docker   DockerAPI
	registry *environments.Registry
	runners  RunnerFunc
	log      *slog.Logger
	now      func() time.Time
}

// New returns a Manager. runners gives the sandbox the checks run in
// (SandboxRunners); log may be nil.
func New(cfg Config, docker DockerAPI, store state.Store, runners RunnerFunc, log *slog.Logger) *Manager {
	def := DefaultConfig()
	if cfg.Bases == nil {
		cfg.Bases = def.Bases
	}
	if cfg.BuildTimeout <= 0 {
		cfg.BuildTimeout = def.BuildTimeout
	}
	if cfg.BuildMemory <= 0 {
		cfg.BuildMemory = def.BuildMemory
	}
	if cfg.BuildCPUs <= 0 {
		cfg.BuildCPUs = def.BuildCPUs
	}
	if cfg.BuildPids <= 0 {
		cfg.BuildPids = def.BuildPids
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, docker: docker, registry: environments.NewRegistry(store), runners: runners, log: log, now: time.Now}
}

// Registry returns the manager's registry (records and event logs).
func (m *Manager) Registry() *environments.Registry { return m.registry }

// base inspects the base image of a built-in environment.
func (m *Manager) base(ctx context.Context, name string) (baseInfo, error) {
	ref, ok := m.cfg.Bases[name]
	if !ok {
		return baseInfo{}, core.E("environments", core.ErrInvalid, fmt.Errorf("base %q: must be python or shell", name))
	}
	info, err := m.docker.ImageInspect(ctx, ref)
	if errdefs.IsNotFound(err) {
		return baseInfo{}, core.E("environments", core.ErrUnavailable, fmt.Errorf("base image %s of %s is missing: build it with `make images`", ref, name))
	}
	if err != nil {
		return baseInfo{}, unavailable("inspect base image "+ref, err)
	}
	b := baseInfo{name: name, ref: ref, id: info.ID, size: info.Size, labels: map[string]string{}}
	if info.Config != nil {
		b.env = info.Config.Env
		for k, v := range info.Config.Labels {
			b.labels[k] = v
		}
	}
	return b, nil
}

// Get returns the record of name; a built-in one describes its image.
func (m *Manager) Get(ctx context.Context, name string) (environments.Record, error) {
	if environments.Builtin(name) {
		return m.builtin(ctx, name)
	}
	rec, _, err := m.registry.Get(ctx, name)
	return rec, err
}

// builtin describes a built-in environment from its image.
func (m *Manager) builtin(ctx context.Context, name string) (environments.Record, error) {
	b, err := m.base(ctx, name)
	if err != nil {
		return environments.Record{}, err
	}
	return environments.Record{Name: name, Builtin: true, Base: name, Hash: b.labels["airlock.image.hash"], Image: b.ref,
		ImageID: b.id, Status: environments.StatusReady, SizeBytes: b.size}, nil
}

// List returns the built-in environments, then every recorded one by name.
// A built-in whose image is missing is listed with status failed.
func (m *Manager) List(ctx context.Context) ([]environments.Record, error) {
	var out []environments.Record
	for _, name := range []string{environments.Python, environments.Shell} {
		rec, err := m.builtin(ctx, name)
		if err != nil {
			rec = environments.Record{Name: name, Builtin: true, Base: name, Image: m.cfg.Bases[name], Status: environments.StatusFailed, Error: err.Error()}
		}
		out = append(out, rec)
	}
	recs, err := m.registry.List(ctx)
	if err != nil {
		return nil, err
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Name < recs[j].Name })
	return append(out, recs...), nil
}

// Remove deletes the environment name: its record and every image of it
// (airlock/env-NAME:*). A built-in cannot be removed (core.ErrInvalid);
// an unknown one is core.ErrNotFound; one being built is core.ErrConflict.
// Config.Retire first drops its idle warm containers; one a live session
// or call still uses is core.ErrConflict saying so, and is kept.
func (m *Manager) Remove(ctx context.Context, name string) error {
	if environments.Builtin(name) {
		return core.E("environments.remove", core.ErrInvalid, fmt.Errorf("%s is a built-in environment and cannot be removed", name))
	}
	rec, _, recErr := m.registry.Get(ctx, name)
	if recErr != nil && !errors.Is(recErr, core.ErrNotFound) {
		return recErr
	}
	if recErr == nil && m.building(rec) {
		return core.E("environments.remove", core.ErrConflict, fmt.Errorf("environment %s is being built (since %s); remove it when the build ends", name, rec.Updated.Format(time.RFC3339)))
	}
	images, err := m.images(ctx, name)
	if err != nil {
		return err
	}
	if recErr != nil && len(images) == 0 {
		return recErr
	}
	if m.cfg.Retire != nil {
		if n := m.cfg.Retire(name); n > 0 {
			m.log.Info("environments: retired idle warm containers before removal", "env", name, "containers", n)
		}
	}
	// The images go first: while a live session or call still holds one,
	// the removal is refused and the environment is kept as it was.
	var errs []error
	for _, id := range images {
		if err := m.removeImage(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, errInUse) {
			return core.E("environments.remove", core.ErrConflict, fmt.Errorf("environment %s is in use: a live session or running call still uses its image; close the sessions of environment %s (or wait for the calls to end) and remove it again", name, name))
		}
		return err
	}
	if err := m.registry.Delete(ctx, name); err != nil && !errors.Is(err, core.ErrNotFound) {
		return err
	}
	if err := m.registry.DeleteSources(ctx, name, ""); err != nil {
		m.log.Warn("environments: delete the stored sources", "env", name, "err", err)
	}
	return nil
}

// errInUse marks an image removal Docker refused because a container
// still uses the image.
var errInUse = errors.New("the image is in use by a container")

// building reports whether rec's build runs (a record left building by a
// process that died is stale after the build timeout).
func (m *Manager) building(rec environments.Record) bool {
	return rec.Status == environments.StatusBuilding && m.now().Sub(rec.Updated) < m.cfg.BuildTimeout+5*time.Minute
}

// images lists the IDs of the images labelled as environment name.
func (m *Manager) images(ctx context.Context, name string) ([]string, error) {
	list, err := m.docker.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelEnvironment+"="+name))})
	if err != nil {
		return nil, unavailable("list the images of "+name, err)
	}
	ids := make([]string, 0, len(list))
	for _, im := range list {
		ids = append(ids, im.ID)
	}
	return ids, nil
}

// removeImage removes an image and its tags (a missing one is fine).
func (m *Manager) removeImage(ctx context.Context, id string) error {
	_, err := m.docker.ImageRemove(ctx, id, image.RemoveOptions{Force: true, PruneChildren: true})
	if err != nil && errdefs.IsConflict(err) {
		m.log.Info("environments: image still in use", "image", shortID(id), "err", err)
		return fmt.Errorf("remove image %s: %w", shortID(id), errInUse)
	}
	if err != nil && !errdefs.IsNotFound(err) {
		return core.E("environments.remove", core.ErrConflict, fmt.Errorf("remove image %s: %w", shortID(id), err))
	}
	return nil
}

func shortID(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}
