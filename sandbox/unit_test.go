package sandbox

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestResolveLimits(t *testing.T) {
	d, max := DefaultConfig().Defaults, DefaultConfig().Max
	got, err := resolve(core.Limits{}, d, max)
	if err != nil || got != d {
		t.Fatalf("zero request must take the defaults: %+v %v", got, err)
	}
	got, err = resolve(core.Limits{Memory: 64 << 20, CPUs: 0.5, Timeout: time.Second}, d, max)
	if err != nil || got.Memory != 64<<20 || got.CPUs != 0.5 || got.Timeout != time.Second || got.Pids != d.Pids {
		t.Fatalf("lowered limits: %+v %v", got, err)
	}
	for _, c := range []struct {
		l    core.Limits
		want string
	}{
		{core.Limits{Memory: max.Memory + 1}, "memory_bytes"},
		{core.Limits{CPUs: max.CPUs * 2}, "cpus"},
		{core.Limits{Pids: max.Pids + 1}, "pids"},
		{core.Limits{Timeout: max.Timeout + time.Second}, "timeout"},
		{core.Limits{OutputBytes: max.OutputBytes + 1}, "output_bytes"},
		{core.Limits{Pids: -1}, "must not be negative"},
		{core.Limits{Memory: 1 << 20}, "16 MiB minimum"},
		{core.Limits{CPUs: 0.001}, "0.01 minimum"},
		{core.Limits{NoFile: 2}, "nofile 2 is below"},
		{core.Limits{Pids: 1}, "pids 1 is below"},
		{core.Limits{Timeout: time.Millisecond}, "100ms minimum"},
	} {
		if _, err := resolve(c.l, d, max); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("resolve(%+v) = %v, want an error naming %q", c.l, err, c.want)
		}
	}
}

func TestCheckEnv(t *testing.T) {
	if err := checkEnv(map[string]string{"TZ": "UTC", "HF_TOKEN": "x", "MY_VAR": "v"}); err != nil {
		t.Fatalf("a call's own env refused: %v", err)
	}
	for env, want := range map[string]string{
		"HOME":       "the sandbox sets HOME itself",
		"PATH":       "the sandbox sets PATH itself",
		"LD_PRELOAD": "the sandbox sets LD_* itself",
		"1BAD":       "not a valid variable name",
	} {
		err := checkEnv(map[string]string{env: "v"})
		if err == nil || !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), env) {
			t.Errorf("env %s: %v, want %q", env, err, want)
		}
	}
	for _, kv := range baseEnv(nil) {
		if LooksSecret(strings.SplitN(kv, "=", 2)[0]) {
			t.Errorf("base env carries a secret-looking variable %s", kv)
		}
	}
}

func TestResolveMount(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	_ = os.WriteFile(file, nil, 0o644)
	link := filepath.Join(t.TempDir(), "link")
	_ = os.Symlink(dir, link)
	if got, err := resolveMount(link); err != nil || got != dir {
		t.Fatalf("symlinked folder must resolve to its target: %q %v", got, err)
	}
	for p, want := range map[string]string{
		"relative/dir":             "absolute",
		filepath.Join(dir, "nope"): "does not exist",
		file:                       "not a directory",
		"/":                        "host root",
		"/var":                     "Docker socket",
		"/proc/self":               "system folder",
		"/sys":                     "system folder",
		"/dev/shm":                 "system folder",
	} {
		_, err := resolveMount(p)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, core.ErrInvalid) {
			t.Errorf("resolveMount(%q) = %v, want %q (core.ErrInvalid)", p, err, want)
		}
		if err != nil && p != "/" && strings.Contains(err.Error(), p) {
			t.Errorf("resolveMount(%q) quotes the host path: %v", p, err)
		}
	}
}

func TestCheckWorkPath(t *testing.T) {
	for _, ok := range []string{"a.csv", "outputs/plot.png", "/work/x/y.txt"} {
		if err := checkWorkPath(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/etc/passwd", "../x", "a/../../b", "/work/", ".", "a\x00b", strings.Repeat("a", 2000)} {
		if err := checkWorkPath(bad); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestHeadTailKeepsBothEnds(t *testing.T) {
	h := newHeadTail(10 + markerRoom)
	for i := 0; i < 1000; i++ {
		h.write(fmt.Sprintf("%03d\n", i))
	}
	got := h.text()
	if !strings.HasPrefix(got, "000\n0") || !strings.HasSuffix(got, "\n999\n") {
		t.Fatalf("head/tail lost: %q", got)
	}
	if h.dropped() != 4000-10 || !strings.Contains(got, "[... 3990 bytes dropped ...]") {
		t.Fatalf("dropped %d: %q", h.dropped(), got)
	}
	if len(h.tail) > 10 || len(h.head) > 5 {
		t.Fatalf("buffers grew: head %d tail %d", len(h.head), len(h.tail))
	}
	small := newHeadTail(100)
	small.write("abc")
	small.write("def")
	if small.text() != "abcdef" || small.dropped() != 0 {
		t.Fatalf("small: %q %d", small.text(), small.dropped())
	}
}

func TestLineReaderAcrossReads(t *testing.T) {
	line := `{"t":"out","id":"x","s":"stdout","d":"hi"}` + "\n" + `{"t":"done","id":"x"}` + "\n"
	lr := lineReader{r: &slowReader{data: []byte(line)}}
	var got []string
	for len(got) < 2 {
		l, err := lr.next(1 << 10)
		if errors.Is(err, errTick) {
			continue // a deadline fired mid-line: the place is kept
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(l))
	}
	if !strings.Contains(got[0], `"out"`) || got[1] != `{"t":"done","id":"x"}` {
		t.Fatalf("lines %q", got)
	}
	if _, err := lr.next(1 << 10); !errors.Is(err, io.EOF) && !errors.Is(err, errTick) {
		t.Fatalf("after the last line: %v", err)
	}
	long := lineReader{r: bytes.NewReader([]byte(strings.Repeat("x", 5000)))}
	if _, err := long.next(100); !errors.Is(err, errLineTooLong) {
		t.Fatalf("unbounded line: %v", err)
	}
	many := lineReader{r: bytes.NewReader(bytes.Repeat([]byte("ab\n"), 100000))}
	for i := 0; i < 100000; i++ {
		if l, err := many.next(10); err != nil || string(l) != "ab" {
			t.Fatalf("line %d: %q %v", i, l, err)
		}
	}
}

func TestCheckArtifacts(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nrest")
	in := []ctlArtifact{
		{Name: "a.png", MIME: "text/html", Size: 999, SHA256: "forged", Data: png},
		{Name: "../etc/passwd", Data: []byte("x")},
		{Name: "/abs", Data: []byte("x")},
		{Name: "a/./b", Data: []byte("x")},
		{Name: "outputs/data.bin", Data: []byte("plain text")},
		{Name: "big.txt", Data: make([]byte, 100)},
		{Name: "c.txt", Data: []byte("c")},
		{Name: "d.txt", Data: []byte("d")},
	}
	out, warn := checkArtifacts(in, 3, 50)
	if len(out) != 3 || out[0].MIME != "image/png" || out[0].Size != int64(len(png)) || out[0].SHA256 == "forged" {
		t.Fatalf("artifacts %+v", out)
	}
	if out[1].Name != "outputs/data.bin" || !strings.HasPrefix(out[1].MIME, "text/plain") || out[2].Name != "c.txt" {
		t.Fatalf("artifacts %+v", out)
	}
	if len(warn) != 5 {
		t.Fatalf("warnings %q", warn)
	}
}

func TestForwarderNeverBlocks(t *testing.T) {
	block := make(chan struct{})
	f := newForwarder(func(core.Event) { <-block })
	start := time.Now()
	for i := 0; i < sinkBuffer*3; i++ {
		f.emit(core.Event{Kind: core.EventStdout, Text: "x"})
	}
	if time.Since(start) > time.Second {
		t.Fatal("emit blocked on a slow sink")
	}
	close(block)
	if n := f.close(); n < sinkBuffer {
		t.Fatalf("dropped %d, want at least %d", n, sinkBuffer)
	}
}

// slowReader returns one byte per read and an error every other read,
// like a read deadline firing mid-frame.
type slowReader struct {
	data []byte
	n    int
}

var errTick = errors.New("tick")

func (r *slowReader) Read(p []byte) (int, error) {
	r.n++
	if r.n%2 == 0 {
		return 0, errTick
	}
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	p[0] = r.data[0]
	r.data = r.data[1:]
	return 1, nil
}

func TestSafeUTF8(t *testing.T) {
	if safeUTF8([]byte("a\xffb\x00")) != "a\uFFFDb\uFFFD" {
		t.Fatal("invalid UTF-8 not replaced")
	}
}

func TestLeftover(t *testing.T) {
	e := New(Config{Instance: "me"}, &fakeDocker{}, nil)
	past, future := "1", "99999999999"
	me := procIdentity(os.Getpid())
	parent := procIdentity(os.Getppid())
	if me == "" || parent == "" {
		t.Fatalf("no process identity: %q %q", me, parent)
	}
	pid := strings.Split(me, ":")[0]
	cases := []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"expired", map[string]string{"airlock.expires": past, LabelInstance: "me"}, true},
		{"ours", map[string]string{"airlock.expires": future, LabelInstance: "me", "airlock.host": e.host}, false},
		{"other host", map[string]string{"airlock.expires": future, LabelInstance: "other", "airlock.host": "elsewhere", labelProc: "1:1"}, false},
		{"other engine in this process", map[string]string{"airlock.expires": future, LabelInstance: "other", "airlock.host": e.host, labelProc: me}, false},
		{"earlier process with our pid", map[string]string{"airlock.expires": future, LabelInstance: "other", "airlock.host": e.host, labelProc: pid + ":1"}, true},
		{"dead pid", map[string]string{"airlock.expires": future, LabelInstance: "other", "airlock.host": e.host, labelProc: "999999999:5"}, true},
		{"live other process", map[string]string{"airlock.expires": future, LabelInstance: "other", "airlock.host": e.host, labelProc: parent}, false},
		{"no owner label", map[string]string{"airlock.expires": future, LabelInstance: "other", "airlock.host": e.host}, true},
	}
	for _, c := range cases {
		if got := e.leftover(c.labels); got != c.want {
			t.Errorf("%s: leftover = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestExecWithFakeDocker checks the container a request asks for (the
// image's controller as pid 1 with its dead man's switch, every isolation
// default, no host path mounted), that an input folder reaches the
// controller as an archive of its files, and that the container is removed.
func TestExecWithFakeDocker(t *testing.T) {
	var cfg *container.Config
	var host *container.HostConfig
	var got ctlRequest
	f := &fakeDocker{
		create: func(c *container.Config, h *container.HostConfig) (container.CreateResponse, error) {
			cfg, host = c, h
			return container.CreateResponse{ID: "c1"}, nil
		},
		serve: fakeController(func(req ctlRequest) []ctlFrame {
			got = req
			return []ctlFrame{{T: "out", S: "stdout", D: "hi\n"}, {T: "out", S: "stderr", D: "oops\n"}, {T: "done", Status: "error", ExitCode: 3}}
		}),
		start: func(string) error { return nil },
	}
	ecfg := DefaultConfig()
	ecfg.Runtime = "runsc"
	e := newFakeEngine(ecfg, f)
	mnt := t.TempDir()
	if err := os.WriteFile(filepath.Join(mnt, "in.txt"), []byte("input"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.Exec(context.Background(), core.Request{Language: core.Shell, Code: "x", Mount: mnt, Env: map[string]string{"TZ": "UTC"},
		Limits: core.Limits{Memory: 64 << 20, CPUs: 0.5, Pids: 10}})
	e.Settle()
	if err != nil || res.Status != core.StatusError || res.ExitCode != 3 || res.Stdout != "hi\n" || res.Stderr != "oops\n" {
		t.Fatalf("result %+v %v", res, err)
	}
	if f.called("remove") != 1 {
		t.Fatalf("container not removed: %v", f.calls)
	}
	if got.Op != "exec" || got.Lang != "shell" || got.Code != "x" || got.Env["TZ"] != "UTC" || got.ArchiveMaxEntries != DefaultInputMaxEntries {
		t.Fatalf("request to the controller %+v", got)
	}
	tr := tar.NewReader(bytes.NewReader(got.Archive))
	if h, err := tr.Next(); err != nil || h.Name != "in.txt" {
		t.Fatalf("the input folder's archive: %v %v", h, err)
	}
	if data, _ := io.ReadAll(tr); string(data) != "input" {
		t.Fatalf("in.txt arrived as %q", data)
	}
	if cfg.User != cfg.Labels[LabelUID]+":"+cfg.Labels[LabelUID] || !DefaultUIDRange.contains(atoiOr0(cfg.Labels[LabelUID])) || !cfg.NetworkDisabled ||
		cfg.Image != "airlock/shell:latest" || strings.Join(cfg.Entrypoint, " ") != "python3 "+RunnerPath || len(cfg.Cmd) != 0 || cfg.StdinOnce || cfg.OpenStdin || cfg.AttachStdin {
		t.Fatalf("config %+v", cfg)
	}
	env := strings.Join(cfg.Env, " ")
	if !strings.Contains(env, "AIRLOCK_PRELOAD=0") || !strings.Contains(env, "AIRLOCK_LINK="+LinkPath) || !strings.Contains(env, "AIRLOCK_WORKSPACE=tmpfs") || strings.Contains(env, "TZ=") || cfg.Labels[LabelManaged] != "true" {
		t.Fatalf("env %v labels %v: the call's env goes with the call, not the container", cfg.Env, cfg.Labels)
	}
	r := host.Resources
	switch {
	case host.NetworkMode != "none", !host.ReadonlyRootfs, host.Privileged, host.Runtime != "runsc",
		len(host.CapDrop) != 1 || host.CapDrop[0] != "ALL", host.Init == nil || *host.Init, !host.AutoRemove,
		!strings.Contains(strings.Join(host.SecurityOpt, ","), "no-new-privileges"),
		strings.Contains(strings.Join(host.SecurityOpt, ","), "unconfined"),
		r.Memory != 64<<20 || r.MemorySwap != 64<<20, r.NanoCPUs != 5e8, r.PidsLimit == nil || *r.PidsLimit != 10,
		len(r.Devices) != 0, len(host.Binds) != 0, len(host.Mounts) != 1 || host.Mounts[0].Target != LinkPath || !host.Mounts[0].ReadOnly, host.IpcMode != "private", host.PidMode != "", host.UTSMode != "",
		host.LogConfig.Config["max-size"] == "", host.Tmpfs[WorkspacePath] == "":
		t.Fatalf("host config %+v", host)
	}
	ul := map[string]int64{}
	for _, u := range r.Ulimits {
		ul[u.Name] = u.Hard
	}
	if ul["core"] != 0 || ul["nofile"] == 0 || ul["fsize"] == 0 || len(ul) != 3 {
		t.Fatalf("ulimits %v", ul)
	}
}

// TestImageWithoutController: an image that lacks the controller label is
// refused with ErrNoController (a platform error naming the image and what
// to do) before any container is created; so is one whose label names
// another runner.
func TestImageWithoutController(t *testing.T) {
	for _, labels := range []map[string]string{nil, {LabelRunner: "/opt/airlock/runner.py", LabelWire: WireLink}, {LabelRunner: RunnerPath}} {
		f := &fakeDocker{image: func(string) (image.InspectResponse, error) {
			return image.InspectResponse{Config: &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: labels}}}, nil
		}}
		cfg := DefaultConfig()
		cfg.PoolSize = 1
		e := New(cfg, f, nil)
		res, err := e.Exec(context.Background(), core.Request{Language: core.Shell, Code: "true"})
		if !errors.Is(err, ErrNoController) || !errors.Is(err, core.ErrUnavailable) || !strings.Contains(err.Error(), "airlock/shell:latest") ||
			!strings.Contains(err.Error(), "make images") || res.Status != "" {
			t.Fatalf("labels %v: %+v %v", labels, res, err)
		}
		if _, _, err := e.OpenSession(context.Background(), core.Request{Owner: "o"}); !errors.Is(err, ErrNoController) {
			t.Fatalf("labels %v: session: %v", labels, err)
		}
		if err := e.Start(context.Background()); !errors.Is(err, ErrNoController) {
			t.Fatalf("labels %v: pools started on an image without the controller: %v", labels, err)
		}
		if f.called("create") != 0 {
			t.Fatalf("labels %v: a container was created: %v", labels, f.calls)
		}
	}
}

// TestDaemonErrorsLeaveNothing: a failing start is a platform error and
// the created container is still removed.
func TestDaemonErrorsLeaveNothing(t *testing.T) {
	f := &fakeDocker{
		create: func(*container.Config, *container.HostConfig) (container.CreateResponse, error) {
			return container.CreateResponse{ID: "c1"}, nil
		},
		start: func(string) error { return errors.New("daemon exploded") },
	}
	e := New(Config{}, f, nil)
	_, err := e.Exec(context.Background(), core.Request{Language: core.Shell, Code: "true"})
	e.Settle()
	if !errors.Is(err, core.ErrUnavailable) || !strings.Contains(err.Error(), "daemon exploded") {
		t.Fatalf("error %v", err)
	}
	if f.called("remove") != 1 {
		t.Fatalf("created container not removed after a failed start: %v", f.calls)
	}
	// Rejections never reach the daemon.
	f2 := &fakeDocker{}
	e2 := New(Config{}, f2, nil)
	res, err := e2.Exec(context.Background(), core.Request{Language: "ruby", Code: "1"})
	if err != nil || res.Status != core.StatusRejected || f2.called("create") != 0 {
		t.Fatalf("bad language: %+v %v %v", res, err, f2.calls)
	}
}
