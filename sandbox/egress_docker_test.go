package sandbox

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
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
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// netRig is the world of the sandbox's network tests: a Docker network the
// test created (internal: no route out) with test servers on it. The
// sandboxes never join it: they reach the servers only through the
// engine's egress proxy, on the host, through their doors.
type netRig struct {
	dc    *client.Client
	net   string
	dir   string
	image string
}

// newNetRig creates the network and the servers' shared folder.
func newNetRig(t *testing.T) *netRig {
	t.Helper()
	integration(t)
	dc, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	r := &netRig{dc: dc, dir: t.TempDir(), image: testImages()[core.Python]}
	created, err := dc.NetworkCreate(t.Context(), fmt.Sprintf("airlock-sbx-egress-%d", time.Now().UnixNano()), network.CreateOptions{
		Driver: "bridge", Internal: true, Labels: map[string]string{"airlock.test": "sandbox-egress"}})
	if err != nil {
		t.Fatal(err)
	}
	r.net = created.ID
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = dc.NetworkRemove(ctx, r.net)
	})
	server, err := os.ReadFile(filepath.Join("..", "egress", "testdata", "server.py"))
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(r.dir, "server.py"), server, 0o644)
	writeTestCert(t, r.dir, "allowed.test", "refused.test", "sneaky.test")
	_ = os.Chmod(r.dir, 0o755)
	return r
}

// start runs a server container (entrypoint cmd) on the network, waits for
// marker in its log and returns its id and address.
func (r *netRig) start(t *testing.T, name string, cmd []string, marker string) (string, netip.Addr) {
	t.Helper()
	ctx := t.Context()
	c, err := r.dc.ContainerCreate(ctx, &container.Config{Image: r.image, User: "0:0", Entrypoint: cmd, WorkingDir: "/t",
		Labels: map[string]string{"airlock.test": "sandbox-egress"}},
		&container.HostConfig{NetworkMode: container.NetworkMode(r.net), Binds: []string{r.dir + ":/t:ro"}}, nil, nil,
		fmt.Sprintf("airlock-sbx-egress-%s-%d", name, time.Now().UnixNano()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = r.dc.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
	})
	if err := r.dc.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(testscale.D(30 * time.Second))
	for !strings.Contains(r.logs(t, c.ID), marker) {
		if time.Now().After(deadline) {
			t.Fatalf("server %s not ready: %s", name, r.logs(t, c.ID))
		}
		time.Sleep(50 * time.Millisecond)
	}
	ins, err := r.dc.ContainerInspect(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ep := range ins.NetworkSettings.Networks {
		if ep.NetworkID == r.net {
			return c.ID, netip.MustParseAddr(ep.IPAddress)
		}
	}
	t.Fatalf("server %s has no address", name)
	return "", netip.Addr{}
}

// logs returns a container's output.
func (r *netRig) logs(t *testing.T, id string) string {
	t.Helper()
	rc, err := r.dc.ContainerLogs(t.Context(), id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out bytes.Buffer
	_, _ = stdcopy.StdCopy(&out, &out, rc)
	return out.String()
}

// writeTestCert writes cert.pem and key.pem, a self-signed certificate for
// names, into dir (the test servers' TLS).
func writeTestCert(t *testing.T, dir string, names ...string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "cert.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o644)
}

// egressSessionRun runs req in its session.
func egressSessionRun(t *testing.T, e *Engine, req core.Request) core.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	res, err := e.SessionExec(ctx, req)
	if err != nil {
		t.Fatalf("session exec: %v", err)
	}
	return res
}

// fence dials only the test's own servers: the proxy can reach nothing else.
type fence []netip.Addr

func (f fence) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !containsAddr(f, ap.Addr().Unmap()) {
		return nil, fmt.Errorf("test fence: %s is not a test server", address)
	}
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

// probe is the code a sandbox runs: every way out it could try, as JSON.
const probe = `
import json, os, socket, urllib.request, ssl
out = {"ifaces": sorted(os.listdir("/sys/class/net")), "door": os.path.exists("/run/airlock/egress.sock"),
       "proxy": os.environ.get("HTTPS_PROXY", "")}
def get(url):
    try:
        with urllib.request.urlopen(url, timeout=20) as r:
            return [r.status, r.read().decode()]
    except urllib.error.HTTPError as e:
        return [e.code, e.headers.get("X-Airlock-Egress", "")]
    except Exception as e:
        return [0, repr(e)]
if out["proxy"]:
    out["allowed"] = get("http://allowed.test/")
    out["refused"] = get("http://refused.test/")
    out["private"] = get("http://sneaky.test/")
    # Domain fronting: a tunnel to an allowed name whose TLS names another.
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=20)
        s.sendall(b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n")
        head = s.recv(4096).decode(errors="replace").split("\r\n")[0]
        ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
        t = ctx.wrap_socket(s, server_hostname="refused.test")
        t.sendall(b"GET / HTTP/1.1\r\nHost: refused.test\r\n\r\n")
        out["fronting"] = [head, t.recv(4096).decode(errors="replace")]
    except Exception as e:
        out["fronting"] = [head if "head" in dir() else "", "error: " + repr(e)]
try:
    socket.create_connection((os.environ["SERVER_B"], 80), timeout=3)
    out["direct"] = "connected"
except Exception as e:
    out["direct"] = repr(e)
try:
    out["dns"] = socket.getaddrinfo("allowed.test", 80)
except Exception as e:
    out["dns"] = "error: " + repr(e)
print(json.dumps(out))
`

// TestEgressSandbox: a call with a policy reaches its allowed host through
// its door and nothing else (a host not on the list, an allowed name on a
// private address the operator did not allow, a fronted tunnel, a direct
// connection, a DNS lookup all fail), every attempt comes back in
// Result.Network and the refused servers' own logs show no connection; a
// session with a policy installs a package with pip from the test's own
// PEP 503 index and imports it in its next call; a container without a
// policy has NetworkMode none, no door and no proxy variables.
func TestEgressSandbox(t *testing.T) {
	r := newNetRig(t)
	// The index: a wheel the test built, served as a PEP 503 simple index.
	idx := filepath.Join(r.dir, "index")
	_ = os.MkdirAll(idx, 0o755)
	whl, err := envtest.Wheel(idx, "airlock-egress-demo", "1.0", map[string]string{"airlock_egress_demo/__init__.py": "VALUE = 'installed through the door'\n"})
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(idx, "simple", "airlock-egress-demo")
	_ = os.MkdirAll(page, 0o755)
	_ = os.WriteFile(filepath.Join(page, "index.html"), []byte(fmt.Sprintf(`<html><body><a href="../../%s">%s</a></body></html>`, filepath.Base(whl), filepath.Base(whl))), 0o644)
	_ = filepath.Walk(idx, func(p string, fi os.FileInfo, _ error) error { return os.Chmod(p, fi.Mode()|0o755) })

	srvA, addrA := r.start(t, "allowed", []string{"python3", "-u", "/t/server.py", "allowed"}, "ready")
	srvB, addrB := r.start(t, "refused", []string{"python3", "-u", "/t/server.py", "refused"}, "ready")
	srvC, addrC := r.start(t, "private", []string{"python3", "-u", "/t/server.py", "private"}, "ready")
	_, addrD := r.start(t, "index", []string{"python3", "-u", "-c", "import http.server,functools;print('serving',flush=True);" +
		"http.server.ThreadingHTTPServer(('0.0.0.0',80),functools.partial(http.server.SimpleHTTPRequestHandler,directory='/t/index')).serve_forever()"}, "serving")

	guard, err := egress.NewGuard([]netip.Prefix{netip.PrefixFrom(addrA, 32), netip.PrefixFrom(addrD, 32)})
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := egress.New(egress.Config{Guard: guard, Dialer: fence{addrA, addrD},
		Resolver: &egress.StaticResolver{Hosts: map[string][]netip.Addr{
			"allowed.test": {addrA}, "refused.test": {addrB}, "sneaky.test": {addrC}, "pypi.test": {addrD}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	doors := t.TempDir()
	e := newTestEngine(t, func(c *Config) {
		c.Egress = EgressConfig{Proxy: proxy, DoorDir: doors}
	})
	pol, err := egress.ParseHosts("allowed.test:80,allowed.test:443,sneaky.test:80,pypi.test:80")
	if err != nil {
		t.Fatal(err)
	}
	timeout := min(testscale.D(4*time.Minute), 5*time.Minute)

	// One-shot, with a policy.
	res := run(t, e, core.Request{Code: probe, Owner: "alice", JobID: "net-1", Egress: pol.String(),
		Env: map[string]string{"SERVER_B": addrB.String()}, Limits: core.Limits{Timeout: timeout}})
	var out map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &out); err != nil || res.Status != core.StatusOK {
		t.Fatalf("probe: %s", brief(res))
	}
	t.Logf("with a policy: %s\nnetwork: %+v", res.Stdout, res.Network)
	if fmt.Sprint(out["ifaces"]) != "[lo]" || out["door"] != true || out["proxy"] != "http://127.0.0.1:3128" {
		t.Errorf("sandbox with a policy: interfaces %v (want only lo: NetworkMode none), door %v, proxy %v", out["ifaces"], out["door"], out["proxy"])
	}
	if a := fmt.Sprint(out["allowed"]); !strings.Contains(a, "200") || !strings.Contains(a, "hello from allowed") {
		t.Errorf("allowed host: %s", a)
	}
	if a := fmt.Sprint(out["refused"]); !strings.Contains(a, "403") || !strings.Contains(a, egress.ReasonNotAllowed) {
		t.Errorf("host not on the list: %s", a)
	}
	if a := fmt.Sprint(out["private"]); !strings.Contains(a, "403") || !strings.Contains(a, egress.ReasonPrivate) {
		t.Errorf("allowed name on a private address: %s", a)
	}
	if a := fmt.Sprint(out["fronting"]); !strings.Contains(a, "200") || !strings.Contains(a, "error") || strings.Contains(a, "hello") {
		t.Errorf("fronted tunnel: %s", a)
	}
	if a := fmt.Sprint(out["direct"]); a == "connected" {
		t.Errorf("direct connection to %s succeeded", addrB)
	}
	if a := fmt.Sprint(out["dns"]); !strings.HasPrefix(a, "error") {
		t.Errorf("DNS lookup inside the sandbox: %s", a)
	}
	want := []core.NetworkAttempt{
		{Host: "allowed.test", Port: 80, Allowed: true},
		{Host: "refused.test", Port: 80, Reason: egress.ReasonNotAllowed},
		{Host: "sneaky.test", Port: 80, Reason: egress.ReasonPrivate},
		{Host: "allowed.test", Port: 443, Reason: egress.ReasonSNIMismatch},
	}
	if len(res.Network) != len(want) {
		t.Fatalf("network: %+v, want %+v", res.Network, want)
	}
	for i, w := range want {
		a := res.Network[i]
		if a.Host != w.Host || a.Port != w.Port || a.Allowed != w.Allowed || a.Reason != w.Reason || a.Allowed != (a.Bytes > 0) {
			t.Errorf("attempt %d: %+v, want %+v", i, a, w)
		}
	}
	if l := r.logs(t, srvA); strings.Count(l, "accept") != 1 {
		t.Errorf("server A should have seen exactly the allowed request:\n%s", l)
	}
	for name, id := range map[string]string{"B": srvB, "C": srvC} {
		if l := r.logs(t, id); strings.TrimSpace(l) != "ready" {
			t.Errorf("server %s was reached:\n%s", name, l)
		}
	}

	// Without a policy: exactly as before.
	res = run(t, e, core.Request{Code: probe, Owner: "alice", Env: map[string]string{"SERVER_B": addrB.String()}, Limits: core.Limits{Timeout: timeout}})
	out = nil
	if err := json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &out); err != nil {
		t.Fatalf("probe without a policy: %s", brief(res))
	}
	if fmt.Sprint(out["ifaces"]) != "[lo]" || out["door"] != false || out["proxy"] != "" || len(res.Network) != 0 ||
		fmt.Sprint(out["direct"]) == "connected" || !strings.HasPrefix(fmt.Sprint(out["dns"]), "error") {
		t.Errorf("sandbox without a policy: %s network %+v", res.Stdout, res.Network)
	}

	// Sessions: the container of one without a policy has no mount but its
	// link; one with a policy has only its door besides, and pip installs
	// into its user site.
	ctx := t.Context()
	plain, rej, err := e.OpenSession(ctx, core.Request{Owner: "alice"})
	if err != nil || rej != nil {
		t.Fatalf("open session: %v %v", err, rej)
	}
	defer e.CloseSession("alice", plain.ID)
	ins, err := r.dc.ContainerInspect(ctx, plain.Container)
	if err != nil || ins.HostConfig.NetworkMode != "none" || len(ins.Mounts) != 1 || ins.Mounts[0].Destination != LinkPath {
		t.Errorf("session without a policy: network %q mounts %+v %v", ins.HostConfig.NetworkMode, ins.Mounts, err)
	}
	sess, rej, err := e.OpenSession(ctx, core.Request{Owner: "alice", Egress: pol.String()})
	if err != nil || rej != nil {
		t.Fatalf("open session with a policy: %v %v", err, rej)
	}
	defer e.CloseSession("alice", sess.ID)
	ins, err = r.dc.ContainerInspect(ctx, sess.Container)
	doorMounts := 0
	for _, m := range ins.Mounts {
		if m.Destination == DoorPath {
			doorMounts++
		}
	}
	if err != nil || ins.HostConfig.NetworkMode != "none" || len(ins.Mounts) != 2 || doorMounts != 1 {
		t.Errorf("session with a policy: network %q mounts %+v %v", ins.HostConfig.NetworkMode, ins.Mounts, err)
	}
	install := `import subprocess, sys
p = subprocess.run([sys.executable, "-m", "pip", "install", "airlock-egress-demo"], capture_output=True, text=True)
print(p.returncode); print(p.stdout[-2000:]); print(p.stderr[-2000:])`
	res = egressSessionRun(t, e, core.Request{SessionID: sess.ID, Owner: "alice", Code: install, Egress: pol.String(), Limits: core.Limits{Timeout: timeout},
		Env: map[string]string{"PIP_INDEX_URL": "http://pypi.test/simple", "PIP_TRUSTED_HOST": "pypi.test"}})
	if res.Status != core.StatusOK || !strings.HasPrefix(res.Stdout, "0\n") {
		t.Fatalf("pip install: %s\nnetwork %+v", brief(res), res.Network)
	}
	if len(res.Network) == 0 || !res.Network[0].Allowed || res.Network[0].Host != "pypi.test" {
		t.Errorf("pip's attempts: %+v", res.Network)
	}
	res = egressSessionRun(t, e, core.Request{SessionID: sess.ID, Owner: "alice", Code: "import airlock_egress_demo; print(airlock_egress_demo.VALUE, airlock_egress_demo.__file__)", Egress: pol.String()})
	if res.Status != core.StatusOK || !strings.HasPrefix(res.Stdout, "installed through the door /work/.local/") || len(res.Network) != 0 {
		t.Errorf("import in the next call: %s", brief(res))
	}
	// A one-shot call's install is gone with the call.
	res = run(t, e, core.Request{Owner: "alice", Code: "import airlock_egress_demo", Egress: pol.String()})
	if res.Status != core.StatusError || !strings.Contains(res.Stderr+fmt.Sprint(res.Error), "ModuleNotFoundError") {
		t.Errorf("another call imported the session's package: %s", brief(res))
	}
	if ents, _ := os.ReadDir(doors); len(ents) > 2 {
		t.Errorf("doors left behind: %v", ents)
	}
}
