package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// dockerRig is the integration test's world: an internal Docker network
// it created (no route out, ICC off), test servers on it, and the proxy
// on the host at the network's gateway address.
type dockerRig struct {
	dc      *client.Client
	image   string
	net     string // network ID
	gateway netip.Addr
	dir     string // scripts and certificate, mounted at /t
}

// testImage is the pinned python image (AIRLOCK_PYTHON_IMAGE), else
// airlock/python:latest.
func testImage() string {
	if img := os.Getenv("AIRLOCK_PYTHON_IMAGE"); img != "" {
		return img
	}
	return "airlock/python:latest"
}

// newDockerRig creates the network and the shared files, or skips (fails
// in CI) without Docker or the image.
func newDockerRig(t *testing.T) *dockerRig {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: -short")
	}
	ctx := t.Context()
	dc, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		_, err = dc.Ping(ctx)
	}
	if err == nil {
		_, err = dc.ImageInspect(ctx, testImage())
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("integration test needs the Docker daemon and %s: %v", testImage(), err)
		}
		t.Skipf("integration test skipped: Docker or %s unavailable: %v", testImage(), err)
	}
	r := &dockerRig{dc: dc, image: testImage()}
	name := fmt.Sprintf("airlock-egress-test-%d", time.Now().UnixNano())
	created, err := dc.NetworkCreate(ctx, name, network.CreateOptions{
		Driver:   "bridge",
		Internal: true,
		Options:  map[string]string{"com.docker.network.bridge.enable_icc": "false"},
		Labels:   map[string]string{"airlock.test": "egress"},
	})
	if err != nil {
		t.Fatalf("create network: %v", err)
	}
	r.net = created.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := dc.NetworkRemove(ctx, r.net); err != nil {
			t.Errorf("remove network %s: %v", name, err)
		}
	})
	ins, err := dc.NetworkInspect(ctx, r.net, network.InspectOptions{})
	if err != nil || len(ins.IPAM.Config) == 0 {
		t.Fatalf("inspect network: %v %+v", err, ins.IPAM)
	}
	r.gateway = netip.MustParseAddr(ins.IPAM.Config[0].Gateway)

	r.dir = t.TempDir()
	cert, _ := testCert(t, "allowed.test", "refused.test", "sneaky.test")
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}),
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
	for _, script := range []string{"server.py", "client.py"} {
		b, err := os.ReadFile(filepath.Join("testdata", script))
		if err != nil {
			t.Fatal(err)
		}
		files[script] = b
	}
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(r.dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(r.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return r
}

// run creates and starts a container on the test network and removes it
// at cleanup; stdin keeps it attached for the client.
func (r *dockerRig) run(t *testing.T, name string, cfg *container.Config, hc *container.HostConfig) string {
	t.Helper()
	ctx := t.Context()
	cfg.Image = r.image
	cfg.Labels = map[string]string{"airlock.test": "egress"}
	hc.NetworkMode = container.NetworkMode(r.net)
	hc.Binds = []string{r.dir + ":/t:ro"}
	c, err := r.dc.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := r.dc.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Errorf("remove %s: %v", name, err)
		}
	})
	return c.ID
}

// start starts a container and returns its address on the test network.
func (r *dockerRig) start(t *testing.T, id string) netip.Addr {
	t.Helper()
	if err := r.dc.ContainerStart(t.Context(), id, container.StartOptions{}); err != nil {
		t.Fatalf("start: %v", err)
	}
	ins, err := r.dc.ContainerInspect(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range ins.NetworkSettings.Networks {
		if ep.NetworkID == r.net {
			return netip.MustParseAddr(ep.IPAddress)
		}
	}
	t.Fatalf("container %s has no address on the test network", id)
	return netip.Addr{}
}

// logs returns a container's output.
func (r *dockerRig) logs(t *testing.T, id string) string {
	t.Helper()
	rc, err := r.dc.ContainerLogs(t.Context(), id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out, errs bytes.Buffer
	if _, err := stdcopy.StdCopy(&out, &errs, rc); err != nil {
		t.Fatal(err)
	}
	return out.String() + errs.String()
}

// server starts a test server container named name and waits for it.
func (r *dockerRig) server(t *testing.T, name string) (string, netip.Addr) {
	t.Helper()
	id := r.run(t, fmt.Sprintf("airlock-egress-test-%s-%d", name, time.Now().UnixNano()),
		&container.Config{User: "0:0", Entrypoint: []string{"python3", "-u", "/t/server.py", name}},
		&container.HostConfig{})
	addr := r.start(t, id)
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for !strings.Contains(r.logs(t, id), "ready") {
		if time.Now().After(deadline) {
			t.Fatalf("server %s not ready: %s", name, r.logs(t, id))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return id, addr
}

// check is one line of the client's output.
type check struct {
	Check     string   `json:"check"`
	Status    int      `json:"status"`
	Body      string   `json:"body"`
	Reason    string   `json:"reason"`
	Error     string   `json:"error"`
	Connect   string   `json:"connect"`
	Connected bool     `json:"connected"`
	Addrs     []string `json:"addrs"`
	Sent      bool     `json:"sent"`
}

// TestEgressDocker runs the sandbox side in a container on an internal
// network with ICC off, the servers in containers on the same network and
// the proxy on the host at the network's gateway: the checks,
// each proven by the servers' own logs.
func TestEgressDocker(t *testing.T) {
	r := newDockerRig(t)
	ctx := t.Context()
	srvA, addrA := r.server(t, "allowed")
	srvB, addrB := r.server(t, "refused")
	srvC, addrC := r.server(t, "private")

	// The operator allows server A's address (the internal mirror) and,
	// to show that the host's own addresses stay refused inside an
	// allowed range, the gateway. Server C is private and not allowed.
	guard, err := NewGuard([]netip.Prefix{netip.PrefixFrom(addrA, 32), netip.PrefixFrom(r.gateway, 32)})
	if err != nil {
		t.Fatal(err)
	}
	resolver := &StaticResolver{Hosts: map[string][]netip.Addr{
		"allowed.test": {addrA}, "refused.test": {addrB}, "sneaky.test": {addrC}, "gw.test": {r.gateway},
	}}
	evs := &events{}
	// The dialer fence: only the test network's servers, never anything else.
	fence := fenceDialer{t: t, allow: netip.PrefixFrom(addrA, 32)}
	p, err := New(Config{Guard: guard, Resolver: resolver, Dialer: fence, Audit: evs.add})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", netip.AddrPortFrom(r.gateway, 0).String())
	if err != nil {
		t.Fatalf("listen on the gateway %s: %v", r.gateway, err)
	}
	go p.Serve(ln)
	t.Cleanup(func() { p.Close() })
	proxyURL := "http://" + ln.Addr().String()

	// The client: the image's own user, no capabilities, no DNS server but
	// server B (so that a lookup the Docker resolver would forward can
	// only reach the test's own container, whose log must stay empty).
	clientID := r.run(t, fmt.Sprintf("airlock-egress-test-client-%d", time.Now().UnixNano()),
		&container.Config{
			Entrypoint: []string{"python3", "-u", "/t/client.py"},
			Env:        []string{"HTTP_PROXY=" + proxyURL, "HTTPS_PROXY=" + proxyURL, "http_proxy=" + proxyURL, "https_proxy=" + proxyURL, "NO_PROXY=", "no_proxy="},
			OpenStdin:  true, StdinOnce: true, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		},
		&container.HostConfig{CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"}, DNS: []string{addrB.String()}})
	att, err := r.dc.ContainerAttach(ctx, clientID, container.AttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	clientAddr := r.start(t, clientID)
	pol, err := ParseHosts("allowed.test,sneaky.test,gw.test")
	if err != nil {
		t.Fatal(err)
	}
	h, err := p.Register(clientAddr, CallInfo{Owner: "alice", CallID: "docker-1", Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()

	quick := testscale.D(3 * time.Second).Seconds()
	checks := []map[string]any{
		{"name": "allowed http", "op": "get", "url": "http://allowed.test/"},
		{"name": "allowed https", "op": "get", "url": "https://allowed.test/"},
		{"name": "refused http", "op": "get", "url": "http://refused.test/"},
		{"name": "refused https", "op": "get", "url": "https://refused.test/"},
		{"name": "private address", "op": "get", "url": "http://sneaky.test/"},
		{"name": "host address", "op": "get", "url": "http://gw.test/"},
		{"name": "fronting", "op": "front", "proxy": ln.Addr().String(), "connect": "allowed.test:443", "sni": "refused.test"},
		{"name": "direct B", "op": "direct", "host": addrB.String(), "port": 80, "timeout": quick},
		{"name": "direct A", "op": "direct", "host": addrA.String(), "port": 443, "timeout": quick},
		{"name": "dns", "op": "dns", "host": "allowed.test", "timeout": testscale.D(20 * time.Second).Seconds()},
		{"name": "udp", "op": "udp", "host": addrB.String(), "port": 53},
	}
	in, _ := json.Marshal(checks)
	if _, err := att.Conn.Write(append(in, '\n')); err != nil {
		t.Fatal(err)
	}
	_ = att.CloseWrite()
	waitCtx, cancel := context.WithTimeout(ctx, testscale.D(2*time.Minute))
	defer cancel()
	okc, errc := r.dc.ContainerWait(waitCtx, clientID, container.WaitConditionNotRunning)
	select {
	case <-okc:
	case err := <-errc:
		t.Fatalf("client: %v", err)
	}
	// The proxy's side of the last attempts may end just after the
	// client's: wait for the seven proxy attempts before the record.
	evs.wait(t, 7)
	rec := h.Close()

	out := r.logs(t, clientID)
	got := map[string]check{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var c check
		if json.Unmarshal(sc.Bytes(), &c) == nil && c.Check != "" {
			got[c.Check] = c
		}
	}
	if len(got) != len(checks) {
		t.Fatalf("client output:\n%s", out)
	}
	t.Logf("client %s, servers A %s B %s C %s, gateway %s; client output:\n%s", clientAddr, addrA, addrB, addrC, r.gateway, out)
	for _, name := range []string{"allowed http", "allowed https"} {
		if c := got[name]; c.Status != 200 || !strings.HasPrefix(c.Body, "hello from allowed (host allowed.test") {
			t.Errorf("%s: %+v", name, c)
		}
	}
	for name, reason := range map[string]string{"refused http": ReasonNotAllowed, "private address": ReasonPrivate, "host address": ReasonLocal} {
		if c := got[name]; c.Status != 403 || c.Reason != reason {
			t.Errorf("%s: %+v, want 403 %s", name, c, reason)
		}
	}
	if c := got["refused https"]; c.Error == "" || !strings.Contains(c.Error, "403") {
		t.Errorf("refused https: %+v", c)
	}
	if c := got["fronting"]; c.Connect != "200" || c.Error == "" || c.Body != "" {
		t.Errorf("fronting: %+v", c)
	}
	for _, name := range []string{"direct A", "direct B"} {
		if c := got[name]; c.Connected || c.Error == "" {
			t.Errorf("%s: %+v", name, c)
		}
	}
	if c := got["dns"]; len(c.Addrs) > 0 || c.Error == "" {
		t.Errorf("a name resolved inside the sandbox: %+v", c)
	}

	// What the proxy recorded, in order.
	want := []Attempt{
		{Host: "allowed.test", Port: 80, Allowed: true},
		{Host: "allowed.test", Port: 443, Allowed: true},
		{Host: "refused.test", Port: 80, Reason: ReasonNotAllowed},
		{Host: "refused.test", Port: 443, Reason: ReasonNotAllowed},
		{Host: "sneaky.test", Port: 80, Reason: ReasonPrivate},
		{Host: "gw.test", Port: 80, Reason: ReasonLocal},
		{Host: "allowed.test", Port: 443, Reason: ReasonSNIMismatch},
	}
	if len(rec.Attempts) != len(want) {
		t.Fatalf("record %+v", rec)
	}
	for i, w := range want {
		a := rec.Attempts[i]
		if a.Host != w.Host || a.Port != w.Port || a.Allowed != w.Allowed || a.Reason != w.Reason || a.Allowed != (a.Bytes > 0) {
			t.Errorf("attempt %d: %+v, want %+v", i, a, w)
		}
	}

	// The servers' own logs: A saw the proxy's two connections (from the
	// gateway) and nothing from the client; B and C saw nothing at all,
	// not the direct connection, the DNS query nor the datagram.
	logA := r.logs(t, srvA)
	if n := strings.Count(logA, "accept"); n != 2 || strings.Count(logA, "accept tcp "+r.gateway.String()) != 1 ||
		strings.Count(logA, "accept tls "+r.gateway.String()) != 1 || strings.Contains(logA, clientAddr.String()) {
		t.Errorf("server A log:\n%s", logA)
	}
	for name, id := range map[string]string{"B": srvB, "C": srvC} {
		if l := r.logs(t, id); strings.TrimSpace(l) != "ready" {
			t.Errorf("server %s was reached:\n%s", name, l)
		}
	}

	// fetch_url from the host through the same policy and guard.
	f, err := NewFetcher(FetchConfig{Guard: guard, Resolver: resolver, Dialer: fence})
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.Fetch(ctx, "alice", "docker-2", pol, FetchRequest{URL: "http://allowed.test/page"})
	if err != nil || res.Status != core.StatusOK || res.Title != "allowed" || res.Text != "# Page of allowed" {
		t.Errorf("fetch page: %+v %v", res, err)
	}
	res, err = f.Fetch(ctx, "alice", "docker-3", pol, FetchRequest{URL: "http://allowed.test/redirect?to=http://refused.test/"})
	if err != nil || res.Status != core.StatusRejected || res.Reason != ReasonNotAllowed || len(res.Network) != 2 {
		t.Errorf("fetch redirect to a refused host: %+v %v", res, err)
	}
	res, err = f.Fetch(ctx, "alice", "docker-4", pol, FetchRequest{URL: "http://sneaky.test/page"})
	if err != nil || res.Status != core.StatusRejected || res.Reason != ReasonPrivate {
		t.Errorf("fetch of a private address: %+v %v", res, err)
	}
	if l := r.logs(t, srvB); strings.TrimSpace(l) != "ready" {
		t.Errorf("server B was reached by fetch:\n%s", l)
	}
	if l := r.logs(t, srvC); strings.TrimSpace(l) != "ready" {
		t.Errorf("server C was reached by fetch:\n%s", l)
	}
}
