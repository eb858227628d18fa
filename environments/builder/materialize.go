package builder

import (
	"context"
	"fmt"

	"github.com/docker/docker/errdefs"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
)

// keepSource stores src in the state store under hash (Registry.SaveSource)
// so other hosts can build the same image, and drops the sources of the
// environment's older images; a failure is logged, never the build's: the
// host that built it still serves it.
func (m *Manager) keepSource(ctx context.Context, src environments.Source, hash string) {
	ctx = context.WithoutCancel(ctx)
	if err := m.registry.SaveSource(ctx, src, hash); err != nil {
		m.log.Warn("environments: keep the source for other hosts", "env", src.Spec.Name, "err", err)
		return
	}
	if err := m.registry.DeleteSources(ctx, src.Spec.Name, hash); err != nil {
		m.log.Warn("environments: drop older sources", "env", src.Spec.Name, "err", err)
	}
}

// Materialize makes src's image on this host's Docker daemon under tag
// (an environment image tag, airlock/env-...), the way Build does (build
// container, commit, checks, then the tag) but without touching the
// environment's record: a worker that lacks an environment's image builds
// it from the stored source while calls keep using the record. A tag that
// exists is a no-op (built false). hash is the record's content hash; the
// image built here carries its own (the same when this host's base image
// is the same image), and a difference is logged.
func (m *Manager) Materialize(ctx context.Context, src environments.Source, hash, tag string, emit environments.EventFunc) (built bool, err error) {
	if emit == nil {
		emit = func(environments.Event) {}
	}
	if err := src.Spec.Validate(); err != nil {
		return false, err
	}
	if _, err := m.docker.ImageInspect(ctx, tag); err == nil {
		return false, nil
	} else if !errdefs.IsNotFound(err) {
		return false, unavailable("inspect "+tag, err)
	}
	base, err := m.base(ctx, src.Spec.Base)
	if err != nil {
		return false, err
	}
	index := src.Spec.IndexURL
	if index == "" && len(src.Spec.Pip) > 0 {
		index = m.cfg.IndexURL
	}
	if len(src.Spec.Pip) > 0 && len(src.Wheels) == 0 && index == "" {
		return false, core.Errorf("environments.build", core.ErrInvalid, "pip: no wheels folder and no index_url, and this host's operator set no package index (AIRLOCK_PIP_INDEX_URL)")
	}
	local := Hash(src, base.id, index)
	if local != hash {
		m.log.Warn("environments: this host's base image differs from the building host's; building the same spec on it",
			"env", src.Spec.Name, "hash", hash, "local_hash", local)
	}
	out, err := m.build(ctx, src, base, index, local, tag, func(ev environments.Event) {
		if ev.Time.IsZero() {
			ev.Time = m.now()
		}
		emit(ev)
	})
	if err != nil {
		return false, fmt.Errorf("environments: build %s here from its stored source: %w (log: %v)", src.Spec.Name, err, out.tail)
	}
	emit(environments.Event{Type: environments.EventDone, Time: m.now(), Line: "built " + tag, Progress: 1})
	return true, nil
}
