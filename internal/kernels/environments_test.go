package kernels

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/artifacts"
	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/internal/jupyter"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/sessions"
	"github.com/airlock-dev/airlock/internal/toolcalls"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/state"
)

// envSandbox is sandbox that opens sessions in environments and
// remembers which.
type envSandbox struct {
	sandbox
	mu   sync.Mutex
	envs []string
}

func (s *envSandbox) OpenIn(ctx context.Context, owner string, env environments.Target, limits core.Limits, bg bool) (string, error) {
	s.mu.Lock()
	s.envs = append(s.envs, env.Name+" "+env.Image)
	s.mu.Unlock()
	return s.Open(ctx, owner, limits, bg)
}

// TestKernelspecPerEnvironment: the gateway lists one kernelspec per
// environment the key may use (python, then airlock-NAME), starting a
// kernel with airlock-geo opens its session in geo (resolved for the
// key), and the kernel lists under that spec's name.
func TestKernelspecPerEnvironment(t *testing.T) {
	st := state.NewMemory(nil)
	ks, err := keys.New("alice:alice-key-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	records := sessionrecords.New(st, time.Hour, 0, nil)
	sb := &envSandbox{}
	calls := toolcalls.New(toolcalls.Config{Grants: toolcalls.Grants{Keys: ks}},
		artifacts.New(artifacts.Config{}, st), records, idempotency.New(st))
	var resolved []string
	b := &Backend{Available: true, Service: sessions.New(sb, records, nil, nil), Records: records, Calls: calls,
		Dispatcher: &dispatch{}, Allow: func(string) bool { return true },
		EnvironmentNames: func(_ context.Context, owner string) []string {
			if owner == "alice" {
				return []string{"geo", "lint"}
			}
			return nil
		},
		Resolve: func(_ context.Context, owner, name string) (environments.Target, error) {
			resolved = append(resolved, owner+"/"+name)
			return environments.Target{Name: name, Base: "python", Image: "airlock/env-" + name + ":0123456789abcdef", Hash: "0123456789abcdef"}, nil
		}}
	gw := jupyter.New(jupyter.Config{WriteError: func(w http.ResponseWriter, _ *http.Request, err error) {
		http.Error(w, err.Error(), http.StatusNotFound)
	}}, b)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gw.Handler().ServeHTTP(w, r.WithContext(jupyter.WithOwner(r.Context(), r.Header.Get("X-Owner"))))
	}))
	defer srv.Close()
	do := func(owner, method, path, body string, out any) int {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("X-Owner", owner)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			_ = json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode
	}

	var specs struct {
		Default     string `json:"default"`
		Kernelspecs map[string]struct {
			Name string `json:"name"`
			Spec struct {
				DisplayName string         `json:"display_name"`
				Language    string         `json:"language"`
				Metadata    map[string]any `json:"metadata"`
			} `json:"spec"`
		} `json:"kernelspecs"`
	}
	do("alice", "GET", "/api/kernelspecs", "", &specs)
	if specs.Default != "python" || len(specs.Kernelspecs) != 3 {
		t.Fatalf("alice's kernelspecs: %+v", specs)
	}
	geo, ok := specs.Kernelspecs["airlock-geo"]
	if !ok || geo.Spec.Language != "python" || !strings.Contains(geo.Spec.DisplayName, "geo") ||
		fmt.Sprint(geo.Spec.Metadata["airlock"]) != "map[environment:geo]" {
		t.Fatalf("the geo kernelspec: %+v", geo)
	}
	var bobs struct {
		Kernelspecs map[string]any `json:"kernelspecs"`
	}
	do("bob", "GET", "/api/kernelspecs", "", &bobs)
	if len(bobs.Kernelspecs) != 1 {
		t.Fatalf("bob, who may use no custom environment, sees %d kernelspecs", len(bobs.Kernelspecs))
	}

	var k struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if code := do("alice", "POST", "/api/kernels", `{"name":"airlock-geo"}`, &k); code != http.StatusCreated || k.Name != "airlock-geo" {
		t.Fatalf("start an airlock-geo kernel: %d %+v", code, k)
	}
	sb.mu.Lock()
	opened := fmt.Sprint(sb.envs)
	sb.mu.Unlock()
	if opened != "[geo airlock/env-geo:0123456789abcdef]" || fmt.Sprint(resolved) != "[alice/geo]" {
		t.Fatalf("the kernel's session opened in %s (resolved %v), want geo for alice", opened, resolved)
	}
	var list []struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	do("alice", "GET", "/api/kernels", "", &list)
	if len(list) != 1 || list[0].Name != "airlock-geo" {
		t.Fatalf("the kernels: %+v", list)
	}
	var one struct {
		Name string `json:"name"`
	}
	do("alice", "GET", "/api/kernels/"+k.ID, "", &one)
	if one.Name != "airlock-geo" {
		t.Fatalf("GET the kernel: %+v", one)
	}
	if code := do("alice", "POST", "/api/kernels", `{"name":"airlock-nope"}`, nil); code != http.StatusNotFound {
		t.Fatalf("an unknown kernelspec: %d", code)
	}
}
