package builder

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/environments"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// fakeDocker answers the calls a test sets; any other call fails the test.
type fakeDocker struct {
	t        *testing.T
	inspect  func(ref string) (image.InspectResponse, error)
	list     func() []image.Summary
	removed  []string
	creating int
	// rmErr, when set, answers ImageRemove.
	rmErr func(id string) error
}

func (f *fakeDocker) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	return f.inspect(ref)
}
func (f *fakeDocker) ImageList(context.Context, image.ListOptions) ([]image.Summary, error) {
	return f.list(), nil
}
func (f *fakeDocker) ImageTag(context.Context, string, string) error {
	f.t.Fatal("ImageTag")
	return nil
}
func (f *fakeDocker) ImageRemove(_ context.Context, id string, _ image.RemoveOptions) ([]image.DeleteResponse, error) {
	if f.rmErr != nil {
		if err := f.rmErr(id); err != nil {
			return nil, err
		}
	}
	f.removed = append(f.removed, id)
	return nil, nil
}
func (f *fakeDocker) ContainerCreate(context.Context, *container.Config, *container.HostConfig, *network.NetworkingConfig, *ocispec.Platform, string) (container.CreateResponse, error) {
	f.creating++
	return container.CreateResponse{}, errors.New("no containers in this test")
}
func (f *fakeDocker) CopyToContainer(context.Context, string, string, io.Reader, container.CopyToContainerOptions) error {
	f.t.Fatal("CopyToContainer")
	return nil
}
func (f *fakeDocker) ContainerAttach(context.Context, string, container.AttachOptions) (types.HijackedResponse, error) {
	f.t.Fatal("ContainerAttach")
	return types.HijackedResponse{}, nil
}
func (f *fakeDocker) ContainerStart(context.Context, string, container.StartOptions) error {
	f.t.Fatal("ContainerStart")
	return nil
}
func (f *fakeDocker) ContainerWait(context.Context, string, container.WaitCondition) (<-chan container.WaitResponse, <-chan error) {
	f.t.Fatal("ContainerWait")
	return nil, nil
}
func (f *fakeDocker) ContainerLogs(context.Context, string, container.LogsOptions) (io.ReadCloser, error) {
	f.t.Fatal("ContainerLogs")
	return nil, nil
}
func (f *fakeDocker) ContainerCommit(context.Context, string, container.CommitOptions) (container.CommitResponse, error) {
	f.t.Fatal("ContainerCommit")
	return container.CommitResponse{}, nil
}
func (f *fakeDocker) ContainerRemove(context.Context, string, container.RemoveOptions) error {
	return nil
}

// baseOnly answers for the base images only.
func baseOnly(ref string) (image.InspectResponse, error) {
	if strings.HasPrefix(ref, "airlock/python") || strings.HasPrefix(ref, "airlock/shell") {
		return image.InspectResponse{ID: "sha256:" + ref, Size: 100, Config: &dockerspec.DockerOCIImageConfig{}}, nil
	}
	return image.InspectResponse{}, errdefs.NotFound(errors.New("no such image"))
}

func newFakeManager(t *testing.T, inspect func(string) (image.InspectResponse, error)) (*Manager, *fakeDocker, state.Store) {
	fd := &fakeDocker{t: t, inspect: inspect, list: func() []image.Summary { return nil }}
	st := state.NewMemory(nil)
	return New(Config{}, fd, st, nil, nil), fd, st
}

func TestBuildRefusesBeforeAnyContainer(t *testing.T) {
	ctx := context.Background()
	m, fd, _ := newFakeManager(t, baseOnly)
	// pip with neither a wheelhouse nor an index: never PyPI.
	_, _, err := m.Build(ctx, environments.Source{Spec: environments.Spec{Name: "x", Pip: []string{"requests"}}}, nil)
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "never installs from PyPI") {
		t.Errorf("pip without a source: %v", err)
	}
	// An invalid spec.
	_, _, err = m.Build(ctx, environments.Source{Spec: environments.Spec{Name: "python"}}, nil)
	if !errors.Is(err, core.ErrInvalid) {
		t.Errorf("built-in name: %v", err)
	}
	// A missing base image says how to build it.
	m2, _, _ := newFakeManager(t, func(string) (image.InspectResponse, error) {
		return image.InspectResponse{}, errdefs.NotFound(errors.New("no such image"))
	})
	_, _, err = m2.Build(ctx, environments.Source{Spec: environments.Spec{Name: "x"}}, nil)
	if !errors.Is(err, core.ErrUnavailable) || !strings.Contains(err.Error(), "make images") {
		t.Errorf("missing base: %v", err)
	}
	if fd.creating != 0 {
		t.Errorf("%d containers created", fd.creating)
	}
}

// TestBuildRefusesWhileBuilding: a second build of an environment whose
// build runs is a conflict; one whose record is stale is not.
func TestBuildRefusesWhileBuilding(t *testing.T) {
	ctx := context.Background()
	m, fd, _ := newFakeManager(t, baseOnly)
	if _, err := m.registry.Put(ctx, environments.Record{Name: "x", Status: environments.StatusBuilding, Updated: time.Now()}, -1); err != nil {
		t.Fatal(err)
	}
	_, _, err := m.Build(ctx, environments.Source{Spec: environments.Spec{Name: "x", Base: environments.Shell}}, nil)
	if !errors.Is(err, core.ErrConflict) || !strings.Contains(err.Error(), "is being built") {
		t.Fatalf("second build: %v", err)
	}
	rec, _, _ := m.registry.Get(ctx, "x")
	rec.Updated = time.Now().Add(-2 * time.Hour)
	if _, err := m.registry.Put(ctx, rec, 0); err != nil {
		t.Fatal(err)
	}
	_, _, err = m.Build(ctx, environments.Source{Spec: environments.Spec{Name: "x", Base: environments.Shell}}, nil)
	if fd.creating != 1 || !errors.Is(err, core.ErrUnavailable) {
		t.Errorf("a stale building record should not block: creating %d, err %v", fd.creating, err)
	}
	got, _, _ := m.registry.Get(ctx, "x")
	if got.Status != environments.StatusFailed || got.FailedStep != environments.StepPrepare || got.Usable() {
		t.Errorf("record after a failed start %+v", got)
	}
}

func TestRemove(t *testing.T) {
	ctx := context.Background()
	m, fd, _ := newFakeManager(t, baseOnly)
	if err := m.Remove(ctx, "python"); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("remove python: %v", err)
	}
	if err := m.Remove(ctx, "nope"); !errors.Is(err, core.ErrNotFound) || !strings.Contains(err.Error(), `"nope" not found`) {
		t.Errorf("remove unknown: %v", err)
	}
	v, err := m.registry.Put(ctx, environments.Record{Name: "geo", Status: environments.StatusBuilding, Updated: time.Now()}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Remove(ctx, "geo"); !errors.Is(err, core.ErrConflict) || !strings.Contains(err.Error(), "being built") {
		t.Errorf("remove while building: %v", err)
	}
	if _, err := m.registry.Put(ctx, environments.Record{Name: "geo", Status: environments.StatusReady}, v); err != nil {
		t.Fatal(err)
	}
	fd.list = func() []image.Summary { return []image.Summary{{ID: "sha256:a"}, {ID: "sha256:b"}} }
	if err := m.Remove(ctx, "geo"); err != nil {
		t.Fatal(err)
	}
	if len(fd.removed) != 2 {
		t.Errorf("removed %v", fd.removed)
	}
	if _, err := m.Get(ctx, "geo"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("get after remove: %v", err)
	}
	// Images without a record (a lost store) are removed too.
	fd.removed = nil
	if err := m.Remove(ctx, "geo"); err != nil || len(fd.removed) != 2 {
		t.Errorf("remove images without a record: %v %v", err, fd.removed)
	}
}

func TestListBuiltinsFirst(t *testing.T) {
	ctx := context.Background()
	m, _, _ := newFakeManager(t, baseOnly)
	for _, n := range []string{"zeta", "alpha"} {
		if _, err := m.registry.Put(ctx, environments.Record{Name: n, Status: environments.StatusReady}, -1); err != nil {
			t.Fatal(err)
		}
	}
	list, err := m.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list {
		names = append(names, r.Name)
	}
	if strings.Join(names, ",") != "python,shell,alpha,zeta" || !list[0].Builtin || list[2].Builtin {
		t.Errorf("list %v", names)
	}
}
