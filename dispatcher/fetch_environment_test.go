package dispatcher

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/environments"
)

// namedEnvironments knows the built-in environments and geo (egress list
// Egress), and refuses anything else as not found.
type namedEnvironments struct{ egress []string }

// Resolve implements EnvironmentResolver.
func (n namedEnvironments) Resolve(_ context.Context, name string, may func(string) bool) (environments.Target, error) {
	if environments.Builtin(name) {
		return environments.Target{Name: name, Base: name}, nil
	}
	if name != "geo" {
		return environments.Target{}, core.Errorf("environments", core.ErrNotFound, "environment \""+name+"\" not found")
	}
	if !may(name) {
		return environments.Target{}, core.Errorf("environments", core.ErrForbidden, "environment \"geo\" is not allowed for this key")
	}
	return environments.Target{Name: "geo", Base: "python", Image: "airlock/env-geo:1", Hash: "1", Egress: n.egress}, nil
}

// TestFetchURLHonoursTheEnvironment: fetch_url naming an environment goes
// through that environment's egress list, which narrows the key's policy
// as for a sandbox call (a host the list leaves out is refused before any
// connection), and an unknown or forbidden environment refuses the call
// with its code, as for run_python. It used to ignore the environment.
func TestFetchURLHonoursTheEnvironment(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("data page"))
	}))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	g, err := egress.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	egress.AllowLoopbackForTest(t, g)
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	f, err := egress.NewFetcher(egress.FetchConfig{Guard: g, Resolver: &egress.StaticResolver{Hosts: map[string][]netip.Addr{"data.test": lo, "pypi.test": lo}}})
	if err != nil {
		t.Fatal(err)
	}
	key, err := egress.ParseHosts("data.test:" + port + ",pypi.test:" + port)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Fetcher = f
	cfg.Egress = func(Call) (egress.Policy, error) { return key, nil }
	cfg.Environments = namedEnvironments{egress: []string{"pypi.test:" + port}}
	d := New(cfg, nil, nil)
	fetch := func(env string, allowed []string) Result {
		args, _ := json.Marshal(map[string]any{"url": "http://data.test:" + port + "/"})
		return d.Run(context.Background(), Call{ID: "c1", Name: ToolFetchURL, Arguments: args, Owner: "alice", Environment: env, Environments: allowed})
	}
	if res := fetch("", nil); res.Status != StatusOK || hits.Load() != 1 {
		t.Fatalf("without an environment: %+v", res)
	}
	res := fetch("geo", []string{"geo"})
	if res.Status != StatusRejected || len(res.Network) != 1 || res.Network[0].Reason != egress.ReasonNotAllowed || hits.Load() != 1 {
		t.Fatalf("geo's egress list leaves data.test out: %+v (server hits %d)", res, hits.Load())
	}
	if res := fetch("nosuch", []string{AllEnvironments}); res.Status != StatusRejected || res.Code != core.ErrNotFound {
		t.Fatalf("unknown environment: %+v", res)
	}
	if res := fetch("geo", nil); res.Status != StatusRejected || res.Code != core.ErrForbidden || hits.Load() != 1 {
		t.Fatalf("forbidden environment: %+v", res)
	}
}
