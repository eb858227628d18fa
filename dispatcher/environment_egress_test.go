package dispatcher

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/environments"
)

// fixedEnvironments resolves every custom name to one target.
type fixedEnvironments struct{ t environments.Target }

// Resolve implements EnvironmentResolver.
func (f fixedEnvironments) Resolve(_ context.Context, name string, _ func(string) bool) (environments.Target, error) {
	if environments.Builtin(name) {
		return environments.Target{Name: name, Base: name}, nil
	}
	t := f.t
	t.Name = name
	return t, nil
}

// TestEnvironmentNarrowsEgress: an environment's egress list can only
// narrow its key's network policy: a listed host stays, one the key
// lacks is not added, an empty list takes the network away, no list
// keeps the key's policy, and a bad list refuses the call before it runs.
func TestEnvironmentNarrowsEgress(t *testing.T) {
	key, err := egress.ParseHosts("pypi.test,data.test:8443")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		list    []string
		want    string // "" no network; "refused" the call is refused
		wantNot string
	}{
		{"narrowed", []string{"pypi.test", "other.test"}, "pypi.test", "data.test"},
		{"no list", nil, "data.test", ""},
		{"empty list", []string{}, "", ""},
		{"bad list", []string{"http://x.test"}, "refused", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Egress = func(Call) (egress.Policy, error) { return key, nil }
			cfg.Environments = fixedEnvironments{t: environments.Target{Base: "python", Image: "airlock/env-geo:1", Hash: "1", Egress: tc.list}}
			exec := okExecutor()
			d, _ := newTestDispatcher(t, cfg, exec)
			args, _ := json.Marshal(map[string]any{"code": "print(1)"})
			res := d.Run(context.Background(), Call{ID: "c1", Name: ToolRunPython, Arguments: args, Owner: "alice",
				Environment: "geo", Environments: []string{AllEnvironments}})
			if tc.want == "refused" {
				if res.Status != StatusRejected || res.Code != core.ErrInvalid || !strings.Contains(res.Content, "geo") || exec.calls() != 0 {
					t.Fatalf("bad egress list: %+v (executor calls %d)", res, exec.calls())
				}
				return
			}
			if res.Status != StatusOK {
				t.Fatalf("call: %+v", res)
			}
			got := exec.last(t).Egress
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) || tc.wantNot != "" && strings.Contains(got, tc.wantNot) {
				t.Fatalf("egress %q, want %q without %q", got, tc.want, tc.wantNot)
			}
		})
	}
}
