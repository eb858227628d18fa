package sandbox

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/environments/envtest"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestEgressPipPackages: with allowed package names (the operator's
// --egress-pip-packages) and a plain-http index (--egress-pip-index, from
// a test container on the test's own network serving wheels the test
// built), a one-shot call installs the allowed package and imports it; a
// second call with the same policy runs warm in the same container (the
// pool of its image and policy) and its pip install of another package is
// refused by the proxy before any download, reported in network with a
// reason naming the package, and the index's own log shows no request for
// it. The first and second calls' latencies are logged.
func TestEgressPipPackages(t *testing.T) {
	r := newNetRig(t)
	idx := filepath.Join(r.dir, "index")
	for _, name := range []string{"airlock-pkg-ok", "airlock-pkg-no"} {
		dir := filepath.Join(idx, "simple", name)
		_ = os.MkdirAll(dir, 0o755)
		mod := strings.ReplaceAll(name, "-", "_")
		whl, err := envtest.Wheel(idx, name, "1.0", map[string]string{mod + "/__init__.py": "VALUE = '" + name + " installed'\n"})
		if err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(dir, "index.html"), []byte(fmt.Sprintf(`<html><body><a href="../../%s">%s</a></body></html>`, filepath.Base(whl), filepath.Base(whl))), 0o644)
	}
	_ = filepath.Walk(idx, func(p string, fi os.FileInfo, _ error) error { return os.Chmod(p, fi.Mode()|0o755) })
	srv, addr := r.start(t, "index", []string{"python3", "-u", "-c", "import http.server,functools;print('serving',flush=True);" +
		"http.server.ThreadingHTTPServer(('0.0.0.0',80),functools.partial(http.server.SimpleHTTPRequestHandler,directory='/t/index')).serve_forever()"}, "serving")

	guard, err := egress.NewGuard([]netip.Prefix{netip.PrefixFrom(addr, 32)})
	if err != nil {
		t.Fatal(err)
	}
	const indexURL = "http://pypi.test/simple"
	proxy, err := egress.New(egress.Config{Guard: guard, Dialer: fence{addr},
		Resolver: &egress.StaticResolver{Hosts: map[string][]netip.Addr{"pypi.test": {addr}}},
		Index:    egress.PackageIndex{URL: indexURL, Names: []string{"Airlock_Pkg_OK"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	e := newTestEngine(t, func(c *Config) {
		c.PoolSize = 1 // warm containers, and so a pool per egress policy
		c.Egress = EgressConfig{Proxy: proxy, DoorDir: t.TempDir(), PipIndex: indexURL}
	})
	pol, err := egress.ParseHosts("pypi.test:80")
	if err != nil {
		t.Fatal(err)
	}
	timeout := min(testscale.D(4*time.Minute), 5*time.Minute)
	install := func(name string) string {
		return fmt.Sprintf(`import subprocess, sys
p = subprocess.run([sys.executable, "-m", "pip", "install", %q], capture_output=True, text=True)
print(p.returncode); print(p.stdout[-1500:]); print(p.stderr[-1500:])
if p.returncode == 0:
    import %s; print(%s.VALUE)`, name, strings.ReplaceAll(name, "-", "_"), strings.ReplaceAll(name, "-", "_"))
	}

	start := time.Now()
	first := run(t, e, core.Request{Owner: "alice", JobID: "pip-1", Code: install("airlock-pkg-ok"), Egress: pol.String(), Limits: core.Limits{Timeout: timeout}})
	cold := time.Since(start)
	if first.Status != core.StatusOK || !strings.HasPrefix(first.Stdout, "0\n") || !strings.Contains(first.Stdout, "airlock-pkg-ok installed") {
		t.Fatalf("allowed package: %s\nnetwork %+v", brief(first), first.Network)
	}
	for _, a := range first.Network {
		if !a.Allowed || a.Host != "pypi.test" {
			t.Errorf("the allowed install's attempts: %+v", first.Network)
		}
	}

	start = time.Now()
	second := run(t, e, core.Request{Owner: "alice", JobID: "pip-2", Code: install("airlock-pkg-no"), Egress: pol.String(), Limits: core.Limits{Timeout: timeout}})
	warm := time.Since(start)
	t.Logf("a call with an egress policy: first (cold) %v, second (same owner and policy) %v; containers %s and %s", cold, warm, first.Container, second.Container)
	if second.Container != first.Container {
		t.Errorf("the second call with the same policy booted container %s; want the warm %s", second.Container, first.Container)
	}
	if second.Status != core.StatusOK || strings.HasPrefix(second.Stdout, "0\n") {
		t.Fatalf("a package not on the list installed: %s", brief(second))
	}
	refused := false
	for _, a := range second.Network {
		if a.Host == "pypi.test" && !a.Allowed && a.Reason == egress.ReasonPackage+":airlock-pkg-no" {
			refused = true
		}
	}
	if !refused {
		t.Errorf("no refusal naming the package in network: %+v\n%s", second.Network, second.Stdout)
	}
	if l := r.logs(t, srv); strings.Contains(l, "airlock-pkg-no") || strings.Contains(l, "airlock_pkg_no") || !strings.Contains(l, "airlock-pkg-ok") {
		t.Errorf("the index's log should show the allowed package only:\n%s", l)
	}
	// The first call's install is gone with it, though the container is the same.
	third := run(t, e, core.Request{Owner: "alice", Code: "import airlock_pkg_ok", Egress: pol.String()})
	if third.Status != core.StatusError || third.Container != first.Container {
		t.Errorf("a later call imported the first call's package, or ran elsewhere: %s", brief(third))
	}
	// The latency of a trivial call with a policy of its own: cold (a
	// container with a door boots), then warm (the owner's idle one).
	pol2 := pol.WithMethods([]string{"GET"}).String()
	var lat [2]time.Duration
	var ctr [2]string
	for i := range lat {
		start := time.Now()
		res := run(t, e, core.Request{Owner: "alice", Code: "print('hi')", Egress: pol2})
		lat[i], ctr[i] = time.Since(start), res.Container
		if res.Status != core.StatusOK {
			t.Fatalf("trivial call %d: %s", i, brief(res))
		}
	}
	t.Logf("a trivial call with a new egress policy: first (cold) %v, second (warm) %v", lat[0], lat[1])
	if ctr[0] != ctr[1] || ctr[0] == first.Container {
		t.Errorf("the policy's pool: containers %v, the first policy's %s", ctr, first.Container)
	}
	// Another owner with the same policy never gets alice's container.
	other := run(t, e, core.Request{Owner: "bob", Code: "print('bob')", Egress: pol.String()})
	if other.Status != core.StatusOK || other.Container == first.Container {
		t.Errorf("bob's call: %s", brief(other))
	}
}
