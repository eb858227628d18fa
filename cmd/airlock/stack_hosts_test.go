package main

import (
	"bytes"
	"testing"

	"github.com/airlock-dev/airlock/environments/hosts"
)

// TestWorkerEnvironmentNamespace: `airlock worker --environment-namespace`
// (or AIRLOCK_ENVIRONMENT_NAMESPACE) names the worker's image namespace,
// and a namespace other than a-z0-9 is refused.
func TestWorkerEnvironmentNamespace(t *testing.T) {
	clearEnv(t)
	t.Setenv("AIRLOCK_REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv(envNamespaceEnv, "")
	var errb bytes.Buffer
	sf, _, _, ok := parseWorkerFlags([]string{"--environment-namespace", "w2"}, &errb)
	if !ok || sf.envNamespace != "w2" {
		t.Fatalf("--environment-namespace w2: %q ok %v: %s", sf.envNamespace, ok, errb.String())
	}
	t.Setenv(envNamespaceEnv, "w3")
	if sf, _, _, ok := parseWorkerFlags(nil, &errb); !ok || sf.envNamespace != "w3" {
		t.Fatalf("%s=w3: %q", envNamespaceEnv, sf.envNamespace)
	}
	h, err := hosts.New(hosts.Config{Namespace: "w2"}, nil, nil, nil, nil)
	if err != nil || h.Tag("geo", "abc") != "airlock/env-geo.w2:abc" {
		t.Fatalf("namespace w2: %v %v", h, err)
	}
	if h, _ := hosts.New(hosts.Config{}, nil, nil, nil, nil); h.Tag("geo", "abc") != "airlock/env-geo:abc" {
		t.Fatalf("no namespace: %s", h.Tag("geo", "abc"))
	}
	if _, err := hosts.New(hosts.Config{Namespace: "W-2"}, nil, nil, nil, nil); err == nil {
		t.Fatal("namespace W-2 accepted")
	}
}
