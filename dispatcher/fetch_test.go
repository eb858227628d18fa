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

	"github.com/airlock-dev/airlock/egress"
)

// TestFetchURL: fetch_url returns an allowed page's text with its attempt
// in Network; without a policy it is refused before any connection; a
// redirect to a host off the list is refused and the refused server never
// sees a connection; bad arguments are refused by the schema.
func TestFetchURL(t *testing.T) {
	var refusedHits atomic.Int64
	refused := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { refusedHits.Add(1) }))
	defer refused.Close()
	refusedURL := strings.Replace(refused.URL, "127.0.0.1", "refused.test", 1)
	var allowedHits atomic.Int64
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allowedHits.Add(1)
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, refusedURL+"/", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<html><head><title>T</title></head><body><h1>Hello page</h1><script>x()</script></body></html>"))
	}))
	defer allowed.Close()
	allowedURL := strings.Replace(allowed.URL, "127.0.0.1", "allowed.test", 1)

	g, err := egress.NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	egress.AllowLoopbackForTest(t, g)
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	f, err := egress.NewFetcher(egress.FetchConfig{Guard: g, Resolver: &egress.StaticResolver{Hosts: map[string][]netip.Addr{"allowed.test": lo, "refused.test": lo}}})
	if err != nil {
		t.Fatal(err)
	}
	port := allowed.Listener.Addr().(interface{ String() string }).String()
	pol, err := egress.ParseHosts("allowed.test:" + port[strings.LastIndex(port, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Fetcher = f
	cfg.Egress = func(call Call) (egress.Policy, error) {
		if call.Owner == "alice" {
			return pol, nil
		}
		return egress.Policy{}, nil
	}
	d := New(cfg, nil, nil)
	call := func(owner, url string) Result {
		args, _ := json.Marshal(map[string]any{"url": url})
		return d.Run(context.Background(), Call{ID: "c1", Name: ToolFetchURL, Arguments: args, Owner: owner})
	}

	res := call("alice", allowedURL+"/page")
	if res.Status != StatusOK || !strings.Contains(res.Content, "Hello page") || strings.Contains(res.Content, "x()") ||
		len(res.Network) != 1 || !res.Network[0].Allowed || res.Network[0].Host != "allowed.test" || res.Network[0].Bytes == 0 {
		t.Fatalf("allowed page: %+v", res)
	}
	before := allowedHits.Load()
	res = call("bob", allowedURL+"/page")
	if res.Status != StatusRejected || res.Reason != "no_network_policy" || allowedHits.Load() != before {
		t.Fatalf("without a policy: %+v", res)
	}
	res = call("alice", allowedURL+"/redirect")
	if res.Status != StatusRejected || len(res.Network) != 2 || res.Network[1].Allowed || res.Network[1].Reason != egress.ReasonNotAllowed || refusedHits.Load() != 0 {
		t.Fatalf("redirect to a refused host: %+v (refused server hits %d)", res, refusedHits.Load())
	}
	res = call("alice", "ftp://allowed.test/")
	if res.Status != StatusRejected || res.Reason != "invalid_arguments" {
		t.Fatalf("bad url: %+v", res)
	}
	if refusedHits.Load() != 0 {
		t.Fatal("the refused server was reached")
	}
}
