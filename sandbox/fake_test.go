package sandbox

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
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
	mu      sync.Mutex
	calls   []string
	create  func(*container.Config, *container.HostConfig) (container.CreateResponse, error)
	attach  func(id string) (types.HijackedResponse, error)
	start   func(id string) error
	kill    func(id, sig string) error
	inspect func(id string) (container.InspectResponse, error)
	update  func(id string, c container.UpdateConfig) error
	remove  func(id string) error
	list    func() ([]container.Summary, error)
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
	return f.create(c, h)
}

func (f *fakeDocker) ContainerAttach(_ context.Context, id string, _ container.AttachOptions) (types.HijackedResponse, error) {
	f.record("attach")
	if f.attach == nil {
		return types.HijackedResponse{}, errUnset
	}
	return f.attach(id)
}

func (f *fakeDocker) ContainerStart(_ context.Context, id string, _ container.StartOptions) error {
	f.record("start")
	if f.start == nil {
		return errUnset
	}
	return f.start(id)
}

func (f *fakeDocker) ContainerWait(_ context.Context, _ string, _ container.WaitCondition) (<-chan container.WaitResponse, <-chan error) {
	f.record("wait")
	ch := make(chan container.WaitResponse, 1)
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

func (f *fakeDocker) ImageInspect(_ context.Context, ref string, _ ...client.ImageInspectOption) (image.InspectResponse, error) {
	f.record("image")
	if f.image == nil {
		// Every image Airlock builds carries the controller.
		return image.InspectResponse{Config: &dockerspec.DockerOCIImageConfig{
			ImageConfig: ocispec.ImageConfig{Labels: map[string]string{LabelRunner: RunnerPath}}}}, nil
	}
	return f.image(ref)
}

func (f *fakeDocker) Ping(context.Context) (types.Ping, error) { return types.Ping{}, nil }

// frame encodes one multiplexed stream frame.
func frame(stream byte, p string) []byte {
	h := make([]byte, 8, 8+len(p))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(p)))
	return append(h, p...)
}

// fakeController returns an attach whose far end plays the in-container
// controller: it sends the ready frame, then answers each request line with
// the frames answer returns (their ids set to the request's). It stops when
// Airlock closes its end, as the real controller's dead man's switch does.
func fakeController(answer func(req ctlRequest) []ctlFrame) types.HijackedResponse {
	return fakeControllerWith([]string{featureArchive}, answer)
}

// fakeControllerWith is fakeController announcing features in its ready frame.
func fakeControllerWith(features []string, answer func(req ctlRequest) []ctlFrame) types.HijackedResponse {
	server, conn := net.Pipe()
	go func() {
		defer server.Close()
		send := func(f ctlFrame) bool {
			line, _ := json.Marshal(f)
			_, err := server.Write(frame(streamStdout, string(line)+"\n"))
			return err == nil
		}
		if !send(ctlFrame{T: "ready", Features: features}) {
			return
		}
		in := bufio.NewReader(server)
		for {
			line, err := in.ReadBytes('\n')
			if err != nil {
				return
			}
			var req ctlRequest
			if json.Unmarshal(line, &req) != nil {
				return
			}
			for _, f := range answer(req) {
				f.ID = req.ID
				if !send(f) {
					return
				}
			}
		}
	}()
	return types.HijackedResponse{Conn: conn, Reader: bufio.NewReader(conn)}
}

// pipeAttach returns a hijacked response whose reader yields data and then EOF.
func pipeAttach(data []byte) types.HijackedResponse {
	server, conn := net.Pipe()
	go func() {
		_, _ = server.Write(data)
		server.Close()
	}()
	return types.HijackedResponse{Conn: conn, Reader: bufio.NewReader(conn)}
}
