package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"sync"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// fakeDocker is a DockerAPI with one function field per method, in the
// style of docker/cli's test fakes. Unset methods fail the call.
type fakeDocker struct {
	mu     sync.Mutex
	calls  []string
	create func(*container.Config, *container.HostConfig) (container.CreateResponse, error)
	// serve plays a started container's controller on its link: the
	// fake connects to the socket mounted at LinkPath (a real one).
	serve func(id string, conn net.Conn)
	links map[string]string // container id -> its link socket's host path
	// exited makes every container exit (and be removed) at once.
	exited  bool
	start   func(id string) error
	kill    func(id, sig string) error
	inspect func(id string) (container.InspectResponse, error)
	update  func(id string, c container.UpdateConfig) error
	remove  func(id string) error
	list    func() ([]container.Summary, error)
	logs    func(id string) (io.ReadCloser, error)
	image   func(ref string) (image.InspectResponse, error)
}

var errUnset = errors.New("fake: method not set")

func (f *fakeDocker) record(c string) {
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
}

func (f *fakeDocker) called(c string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, x := range f.calls {
		if x == c {
			n++
		}
	}
	return n
}

func (f *fakeDocker) ContainerCreate(_ context.Context, c *container.Config, h *container.HostConfig, _ *network.NetworkingConfig, _ *ocispec.Platform, _ string) (container.CreateResponse, error) {
	f.record("create")
	if f.create == nil {
		return container.CreateResponse{}, errUnset
	}
	resp, err := f.create(c, h)
	if err == nil {
		for _, m := range h.Mounts {
			if m.Target == LinkPath {
				f.mu.Lock()
				if f.links == nil {
					f.links = map[string]string{}
				}
				f.links[resp.ID] = m.Source
				f.mu.Unlock()
			}
		}
	}
	return resp, err
}

func (f *fakeDocker) ContainerStart(_ context.Context, id string, _ container.StartOptions) error {
	f.record("start")
	if f.start == nil {
		return errUnset
	}
	if err := f.start(id); err != nil {
		return err
	}
	f.mu.Lock()
	path := f.links[id]
	f.mu.Unlock()
	if f.serve != nil && path != "" {
		conn, err := net.Dial("unix", path)
		if err != nil {
			return err
		}
		go f.serve(id, conn)
	}
	return nil
}

// ContainerWait: the fake's containers exit at once (for the OOM check),
// but are never removed (a link's accept waits for its controller).
func (f *fakeDocker) ContainerWait(ctx context.Context, _ string, cond container.WaitCondition) (<-chan container.WaitResponse, <-chan error) {
	f.record("wait")
	ch := make(chan container.WaitResponse, 1)
	if cond == container.WaitConditionRemoved && !f.exited {
		errC := make(chan error, 1)
		context.AfterFunc(ctx, func() { errC <- ctx.Err() })
		return ch, errC
	}
	ch <- container.WaitResponse{}
	return ch, make(chan error)
}

func (f *fakeDocker) ContainerKill(_ context.Context, id, sig string) error {
	f.record("kill")
	if f.kill == nil {
		return nil
	}
	return f.kill(id, sig)
}

func (f *fakeDocker) ContainerInspect(_ context.Context, id string) (container.InspectResponse, error) {
	f.record("inspect")
	if f.inspect == nil {
		return container.InspectResponse{}, errUnset
	}
	return f.inspect(id)
}

func (f *fakeDocker) ContainerUpdate(_ context.Context, id string, c container.UpdateConfig) (container.UpdateResponse, error) {
	f.record("update")
	if f.update == nil {
		return container.UpdateResponse{}, errUnset
	}
	return container.UpdateResponse{}, f.update(id, c)
}

func (f *fakeDocker) ContainerRemove(_ context.Context, id string, _ container.RemoveOptions) error {
	f.record("remove")
	if f.remove == nil {
		return nil
	}
	return f.remove(id)
}

func (f *fakeDocker) ContainerList(_ context.Context, _ container.ListOptions) ([]container.Summary, error) {
	f.record("list")
	if f.list == nil {
		return nil, nil
	}
	return f.list()
}

func (f *fakeDocker) ContainerLogs(_ context.Context, id string, _ container.LogsOptions) (io.ReadCloser, error) {
	f.record("logs")
	if f.logs == nil {
		return nil, errUnset
	}
	return f.logs(id)
}

func (f *fakeDocker) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	f.record("image")
	if f.image == nil {
		// Every image Airlock builds carries the controller.
		return image.InspectResponse{Config: &dockerspec.DockerOCIImageConfig{
			ImageConfig: ocispec.ImageConfig{Labels: map[string]string{LabelRunner: RunnerPath, LabelWire: WireLink}}}}, nil
	}
	return f.image(ref)
}

func (f *fakeDocker) Ping(context.Context) (types.Ping, error) { return types.Ping{}, nil }

// newFakeEngine is New for a fake Docker: its controllers are this
// process, so the link's peer check (uid, pid 1) is not made.
func newFakeEngine(cfg Config, f *fakeDocker) *Engine {
	e := New(cfg, f, nil)
	e.linkPeer = func(context.Context, *net.UnixConn, string, int) error { return nil }
	return e
}

// fakeController plays the in-container controller on a link: it sends the
// ready frame, then answers each request line with the frames answer
// returns (their ids set to the request's). It stops when Airlock closes
// its end, as the real controller's dead man's switch does.
func fakeController(answer func(req ctlRequest) []ctlFrame) func(string, net.Conn) {
	return fakeControllerWith([]string{featureArchive}, answer)
}

// fakeControllerWith is fakeController announcing features in its ready frame.
func fakeControllerWith(features []string, answer func(req ctlRequest) []ctlFrame) func(string, net.Conn) {
	return fakeControllerSending(features, func(req ctlRequest, send func(ctlFrame) bool) {
		for _, f := range answer(req) {
			f.ID = req.ID
			if !send(f) {
				return
			}
		}
	})
}

// fakeControllerSending plays a controller that announces features, then
// hands each request to answer, which sends its frames itself (when and
// as it likes, ids included).
func fakeControllerSending(features []string, answer func(req ctlRequest, send func(ctlFrame) bool)) func(string, net.Conn) {
	return func(_ string, conn net.Conn) {
		defer conn.Close()
		send := func(f ctlFrame) bool {
			line, _ := json.Marshal(f)
			_, err := conn.Write(append(line, '\n'))
			return err == nil
		}
		if !send(ctlFrame{T: "ready", Features: features}) {
			return
		}
		in := bufio.NewReader(conn)
		for {
			line, err := in.ReadBytes('\n')
			if err != nil {
				return
			}
			var req ctlRequest
			if json.Unmarshal(line, &req) != nil {
				return
			}
			answer(req, send)
		}
	}
}
