package builder

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/environments"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/errdefs"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/sandbox"
)

// Build makes src's environment an image and records it. An image of the
// same content hash that already exists is not rebuilt (built is false;
// the record is brought up to date). Otherwise the spec is built in a
// build container from the base image pinned by ID, committed, checked
// and only then tagged airlock/env-NAME:HASH; older images of the
// environment are removed. Events go to emit (may be nil) and to the
// build's event log in the registry. A failed build leaves no image and no
// container behind, records the failure and returns an
// *environments.BuildError naming the step and the package or check that
// failed.
func (m *Manager) Build(ctx context.Context, src environments.Source, emit environments.EventFunc) (rec environments.Record, built bool, err error) {
	if emit == nil {
		emit = func(environments.Event) {}
	}
	spec := src.Spec
	if err := spec.Validate(); err != nil {
		return environments.Record{}, false, err
	}
	base, err := m.base(ctx, spec.Base)
	if err != nil {
		return environments.Record{}, false, err
	}
	index := spec.IndexURL
	if index == "" && len(spec.Pip) > 0 {
		index = m.cfg.IndexURL
	}
	if len(spec.Pip) > 0 && len(src.Wheels) == 0 && index == "" {
		return environments.Record{}, false, core.Errorf("environments.build", core.ErrInvalid, "pip: no wheels folder and no index_url, and the operator set no package index (AIRLOCK_PIP_INDEX_URL): Airlock never installs from PyPI by default")
	}
	hash := Hash(src, base.id, index)
	tag := ImageRepo(spec.Name) + ":" + hash
	prev, ver, err := m.registry.Get(ctx, spec.Name)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		return environments.Record{}, false, err
	}
	if rec, ok, err := m.upToDate(ctx, spec, base, hash, tag, prev, ver); err != nil || ok {
		if ok {
			m.keepSource(ctx, src, hash)
			emit(environments.Event{Type: environments.EventDone, Time: m.now(), Line: "up to date: " + tag, Progress: 1, Record: &rec})
		}
		return rec, false, err
	}
	start := m.now()
	rec = prev
	rec.Name, rec.Base, rec.Spec, rec.Status = spec.Name, spec.Base, &spec, environments.StatusBuilding
	rec.BuildID, rec.FailedStep, rec.Error, rec.LogTail, rec.Checks = fmt.Sprintf("%x", start.UnixNano()), "", "", nil, nil
	rec.Updated = start
	if rec.Created.IsZero() {
		rec.Created = start
	}
	if m.building(prev) {
		return environments.Record{}, false, core.E("environments.build", core.ErrConflict, fmt.Errorf("environment %s is being built (since %s)", spec.Name, prev.Updated.Format(time.RFC3339)))
	}
	if ver == 0 {
		ver = -1
	}
	if ver, err = m.registry.Put(ctx, rec, ver); err != nil {
		if errors.Is(err, core.ErrConflict) {
			return environments.Record{}, false, core.E("environments.build", core.ErrConflict, fmt.Errorf("environment %s is being built by another process", spec.Name))
		}
		return environments.Record{}, false, err
	}
	logged := func(ev environments.Event) {
		if ev.Time.IsZero() {
			ev.Time = m.now()
		}
		emit(ev)
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := m.registry.AppendEvent(actx, spec.Name, rec.BuildID, ev); err != nil {
			m.log.Warn("environments: event log", "env", spec.Name, "err", err)
		}
	}
	out, berr := m.build(ctx, src, base, index, hash, tag, logged)
	rec.Updated = m.now()
	rec.LogTail = out.tail
	if berr != nil {
		var be *environments.BuildError
		if !errors.As(berr, &be) {
			be = &environments.BuildError{Name: spec.Name, Step: out.step, Msg: berr.Error(), Code: core.CodeOf(berr)}
		}
		rec.Status, rec.FailedStep, rec.Error, rec.Checks = environments.StatusFailed, be.Step, be.Msg, out.checks
		rec.Hash, rec.Image, rec.ImageID, rec.Packages, rec.SizeBytes, rec.AddedBytes = "", "", "", nil, 0, 0
		m.putFinal(rec, ver)
		logged(environments.Event{Type: environments.EventFailed, Step: be.Step, Error: be.Error(), Record: &rec})
		return rec, false, berr
	}
	rec.Status, rec.Hash, rec.Image, rec.ImageID, rec.BaseImage = environments.StatusReady, hash, tag, out.imageID, base.id
	rec.Packages, rec.SizeBytes, rec.AddedBytes, rec.Checks = out.packages, out.size, out.size-base.size, out.checks
	rec.BuildSeconds = rec.Updated.Sub(start).Seconds()
	if err := m.putFinal(rec, ver); err != nil {
		return rec, true, err
	}
	m.removeOlder(ctx, spec.Name, out.imageID)
	m.keepSource(ctx, src, hash)
	logged(environments.Event{Type: environments.EventDone, Line: "built " + tag, Progress: 1, Record: &rec})
	return rec, true, nil
}

// putFinal writes the record at the end of a build, off the build's
// context (a canceled build still records its failure).
func (m *Manager) putFinal(rec environments.Record, ver int64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := m.registry.Put(ctx, rec, ver)
	if err != nil {
		m.log.Warn("environments: record the build", "env", rec.Name, "err", err)
	}
	return err
}

// upToDate reports whether tag already exists (a checked image: only
// checked images are tagged) and, if so, brings the record up to date
// from the image: a no-op build.
func (m *Manager) upToDate(ctx context.Context, spec environments.Spec, base baseInfo, hash, tag string, prev environments.Record, ver int64) (environments.Record, bool, error) {
	info, err := m.docker.ImageInspect(ctx, tag)
	if errdefs.IsNotFound(err) {
		return environments.Record{}, false, nil
	}
	if err != nil {
		return environments.Record{}, false, unavailable("inspect "+tag, err)
	}
	if info.Config == nil || info.Config.Labels[LabelHash] != hash {
		return environments.Record{}, false, nil
	}
	if prev.Status == environments.StatusReady && prev.Hash == hash && prev.ImageID == info.ID && prev.Spec != nil && equalSpec(*prev.Spec, spec) {
		return prev, true, nil
	}
	rec := prev
	now := m.now()
	if rec.Created.IsZero() {
		rec.Created = now
	}
	rec.Name, rec.Base, rec.Spec, rec.Status, rec.Updated = spec.Name, spec.Base, &spec, environments.StatusReady, now
	rec.Hash, rec.Image, rec.ImageID, rec.BaseImage = hash, tag, info.ID, base.id
	rec.SizeBytes, rec.AddedBytes, rec.FailedStep, rec.Error = info.Size, info.Size-base.size, "", ""
	_ = json.Unmarshal([]byte(info.Config.Labels[LabelPackages]), &rec.Packages)
	if ver == 0 {
		ver = -1
	}
	if _, err := m.registry.Put(ctx, rec, ver); err != nil {
		return environments.Record{}, false, err
	}
	return rec, true, nil
}

// equalSpec compares two specs field by field.
func equalSpec(a, b environments.Spec) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// buildOutput is what a build produced, also when it failed.
type buildOutput struct {
	imageID  string
	size     int64
	packages []string
	checks   []environments.Check
	tail     []string
	step     string // the step it was in
}

// build runs the build container, commits it and checks the image; on
// any failure it removes what it made.
func (m *Manager) build(ctx context.Context, src environments.Source, base baseInfo, index, hash, tag string, emit environments.EventFunc) (out buildOutput, err error) {
	name := src.Spec.Name
	p := newPlan(src, index, m.cfg.Mirror)
	n := nonce()
	t := newTracker(emit, n, stepsOf(p, src), len(src.Spec.Pip)+len(src.Wheels))
	defer func() { out.tail, out.step = t.tail, t.step }()
	t.begin(environments.StepPrepare, fmt.Sprintf("building %s from %s (%s)", tag, base.ref, shortID(base.id)))
	tar, err := contextTar(src, p, n)
	if err != nil {
		return out, err
	}
	run, err := m.startBuild(ctx, base.id, p, tar)
	if err != nil {
		return out, err
	}
	defer run.stop()
	ended, exit, err := run.follow(ctx, name, t)
	if err != nil {
		return out, err
	}
	if !ended {
		return out, classify(name, t.step, t.stepLog, exit)
	}
	out.packages = t.packages
	t.begin(environments.StepCommit, "committing the image")
	id, err := m.commit(ctx, run.id, src.Spec, base, hash, t.packages)
	if err != nil {
		return out, err
	}
	run.stop()
	t.begin(environments.StepChecks, "checking the image in the sandbox")
	out.checks, err = m.checkImage(ctx, name, id, base, src.Spec, t)
	if err == nil {
		err = m.tag(ctx, id, tag)
	}
	if err != nil {
		if rerr := m.removeImage(context.WithoutCancel(ctx), id); rerr != nil {
			m.log.Warn("environments: remove the refused image", "image", id, "err", rerr)
		}
		return out, err
	}
	info, err := m.docker.ImageInspect(ctx, id)
	if err != nil {
		return out, unavailable("inspect the new image", err)
	}
	t.finish()
	out.imageID, out.size = id, info.Size
	return out, nil
}

// commit makes the waiting build container an image and finishes it like
// images/build.sh's final recipe: the sandbox user, /work, the base's env
// plus the spec's, /bin/bash, the base's airlock labels and the
// environment's. The image is untagged until it passes its checks.
func (m *Manager) commit(ctx context.Context, id string, spec environments.Spec, base baseInfo, hash string, packages []string) (string, error) {
	labels := map[string]string{}
	for k, v := range base.labels {
		labels[k] = v
	}
	pk, _ := json.Marshal(packages)
	if len(pk) > 16<<10 {
		pk = []byte("[]")
	}
	labels["airlock.image"] = "env-" + spec.Name
	labels["airlock.image.hash"] = hash
	labels[LabelEnvironment], labels[LabelHash], labels[LabelBase], labels[LabelPackages] = spec.Name, hash, spec.Base, string(pk)
	cfg := &container.Config{
		User:       sandbox.SandboxUser,
		WorkingDir: "/work",
		Cmd:        []string{"/bin/bash"},
		Env:        mergeEnv(base.env, spec.Env),
		Labels:     labels,
	}
	res, err := m.docker.ContainerCommit(ctx, id, container.CommitOptions{Comment: "airlock environment " + spec.Name + " " + hash, Config: cfg, Pause: true})
	if err != nil {
		return "", unavailable("commit the image", err)
	}
	return res.ID, nil
}

// tag names the checked image.
func (m *Manager) tag(ctx context.Context, id, tag string) error {
	if err := m.docker.ImageTag(ctx, id, tag); err != nil {
		return unavailable("tag "+tag, err)
	}
	return nil
}

// removeOlder removes the environment's images other than keep; one still
// used by a running container stays (logged) until `env rm` or a later build.
func (m *Manager) removeOlder(ctx context.Context, name, keep string) {
	ids, err := m.images(ctx, name)
	if err != nil {
		m.log.Warn("environments: list older images", "env", name, "err", err)
		return
	}
	for _, id := range ids {
		if id == keep {
			continue
		}
		if err := m.removeImage(ctx, id); err != nil {
			m.log.Warn("environments: remove an older image", "env", name, "err", err)
		}
	}
}

// mergeEnv is the base image's env with the spec's set over it, sorted
// after the base's entries.
func mergeEnv(base []string, set map[string]string) []string {
	out := slices.Clone(base)
	keys := slices.Sorted(maps.Keys(set))
	for _, k := range keys {
		out = slices.DeleteFunc(out, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		out = append(out, k+"="+set[k])
	}
	return out
}
