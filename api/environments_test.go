package api

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/wire"
)

// keyAdmin is an admin key of the environment tests (admin=true).
const keyAdmin = "admin-key-0123456789abcdef"

// fakeEnvs is an environments service with one custom environment, geo.
type fakeEnvs struct {
	created []wire.CreateEnvironmentRequest
}

func (f *fakeEnvs) Resolve(ctx context.Context, name string, may func(string) bool) (environments.Target, error) {
	if environments.Builtin(name) {
		return environments.Target{Name: name, Base: name}, nil
	}
	if name != "geo" {
		return environments.Target{}, core.Errorf("environments", core.ErrNotFound, "environment \""+name+"\" not found")
	}
	if !may(name) {
		return environments.Target{}, core.Errorf("environments", core.ErrForbidden, "environment \"geo\" is not allowed for this key")
	}
	return environments.Target{Name: "geo", Base: "python", Image: "airlock/env-geo:0123", Hash: "0123"}, nil
}

func (f *fakeEnvs) geo() wire.Environment {
	return wire.Environment{Name: "geo", Base: "python", Status: "ready", Hash: "0123", Image: "airlock/env-geo:0123", Warm: 1,
		Packages: []string{"tree=2.1"}, SizeBytes: 10, BuildSeconds: 90, BuildID: "b1", Created: t0, Updated: t0}
}

func (f *fakeEnvs) List(context.Context) (wire.EnvironmentList, error) {
	return wire.EnvironmentList{Environments: []wire.Environment{{Name: "python", Builtin: true, Base: "python", Status: "ready"}, f.geo()}}, nil
}

func (f *fakeEnvs) Get(_ context.Context, name string) (wire.Environment, error) {
	if name != "geo" {
		return wire.Environment{}, core.Errorf("environments", core.ErrNotFound, "environment \""+name+"\" not found")
	}
	return f.geo(), nil
}

func (f *fakeEnvs) Create(_ context.Context, req wire.CreateEnvironmentRequest) (wire.Environment, error) {
	f.created = append(f.created, req)
	g := f.geo()
	g.Status = "building"
	return g, nil
}

func (f *fakeEnvs) Remove(context.Context, string) error { return nil }

func (f *fakeEnvs) Events(context.Context, string, int64, int, time.Duration) ([]wire.EnvironmentEvent, []int64, bool, error) {
	g := f.geo()
	return []wire.EnvironmentEvent{{Type: "step", Time: t0, Step: "apt", Line: "apt-get install"}, {Type: "done", Time: t0, Progress: 1, Environment: &g}}, []int64{1, 2}, true, nil
}

// envHarness is a harness with the fake environments service and keys
// alice (environments=geo), bob (none) and admin (admin=true).
func envHarness(t *testing.T) (*harness, *fakeEnvs) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	if err := os.WriteFile(file, []byte("alice:"+keyAlice+" environments=geo\nbob:"+keyBob+"\nadmin:"+keyAdmin+" admin=true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := keys.Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	envs := &fakeEnvs{}
	h := newHarness(t, func(c *Config, d *Deps) { c.Keys = ks; d.Environments = envs })
	return h, envs
}

// conformEnvironments drives the environment routes and returns the
// exchanges validated against the document.
func conformEnvironments(t *testing.T) map[string]bool {
	h, _ := envHarness(t)
	h.do(keyAdmin, "POST", "/v1/environments", map[string]any{"spec": map[string]any{"name": "geo"},
		"wheels": []any{map[string]any{"name": "a-1.0-py3-none-any.whl", "content": "UEsDBA=="}}})
	h.do(keyAlice, "GET", "/v1/environments", nil)
	h.do(keyAlice, "GET", "/v1/environments/geo", nil)
	h.do(keyAdmin, "GET", "/v1/environments/geo/events", nil)
	h.do(keyAdmin, "DELETE", "/v1/environments/geo", nil)
	return h.oa.seen
}

// TestEnvironmentRoutes: only admin keys build, remove and read build
// events (403 otherwise); an unknown environment is 404 naming it; a
// session names its environment (403 forbidden, 404 unknown) and a run too.
func TestEnvironmentRoutes(t *testing.T) {
	h, envs := envHarness(t)
	for _, key := range []string{keyAlice, keyBob} {
		for _, r := range []struct{ method, path string }{{"POST", "/v1/environments"}, {"DELETE", "/v1/environments/geo"}, {"GET", "/v1/environments/geo/events"}} {
			if res := h.do(key, r.method, r.path, map[string]any{"spec": map[string]any{"name": "geo"}}); res.Code != http.StatusForbidden || !strings.Contains(string(res.Body), "admin") {
				t.Errorf("%s %s by a non-admin key: %d %s", r.method, r.path, res.Code, res.Body)
			}
		}
	}
	if len(envs.created) != 0 {
		t.Errorf("a non-admin key built: %v", envs.created)
	}
	if res := h.do(keyAdmin, "POST", "/v1/environments", map[string]any{"spec": map[string]any{"name": "geo"}}); res.Code != http.StatusAccepted {
		t.Errorf("admin POST: %d %s", res.Code, res.Body)
	}
	if res := h.do(keyAdmin, "GET", "/v1/environments/geo/events", nil); res.Code != 200 || !strings.Contains(string(res.Body), "event: done") {
		t.Errorf("events: %d %s", res.Code, res.Body)
	}
	if res := h.do(keyBob, "GET", "/v1/environments/nope", nil); res.Code != 404 || !strings.Contains(string(res.Body), "nope") {
		t.Errorf("unknown: %d %s", res.Code, res.Body)
	}
	var list wire.EnvironmentList
	if err := json.Unmarshal(h.do(keyBob, "GET", "/v1/environments", nil).Body, &list); err != nil || len(list.Environments) != 2 || list.Environments[1].Warm != 1 {
		t.Errorf("list: %+v %v", list, err)
	}
	for _, c := range []struct {
		key, env string
		code     int
	}{{keyBob, "geo", 403}, {keyAlice, "nope", 404}, {keyBob, "nope", 404}, {keyAlice, "geo", 201}, {keyBob, "python", 201}, {keyAdmin, "geo", 201}} {
		res := h.do(c.key, "POST", "/v1/sessions", map[string]any{"environment": c.env})
		if res.Code != c.code || (c.code != 201 && !strings.Contains(string(res.Body), c.env)) {
			t.Errorf("session in %s: %d %s, want %d", c.env, res.Code, res.Body, c.code)
		}
		if c.code == 201 && !strings.Contains(string(res.Body), `"environment":"`+c.env+`"`) {
			t.Errorf("session in %s: the answer does not name it: %s", c.env, res.Body)
		}
		if c.code != 201 {
			if res := h.do(c.key, "POST", "/v1/runs", map[string]any{"goal": "x", "environment": c.env}); res.Code != c.code {
				t.Errorf("run in %s: %d %s, want %d", c.env, res.Code, res.Body, c.code)
			}
		}
	}
}

// OpenIn opens a session in env (the fake notes its name in openedIn).
func (f *fakeSessions) OpenIn(ctx context.Context, owner string, env environments.Target, limits core.Limits, background bool) (string, error) {
	id, err := f.Open(ctx, owner, limits, background)
	if err == nil {
		f.mu.Lock()
		if f.openedIn == nil {
			f.openedIn = map[string]string{}
		}
		f.openedIn[id] = env.Name
		f.mu.Unlock()
	}
	return id, err
}
