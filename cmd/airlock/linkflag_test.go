package main

import (
	"bytes"
	"testing"
)

// TestLinkDirFlag: --link-dir, else AIRLOCK_LINK_DIR, names the folder of
// the sandboxes' link sockets; unset, the engine makes a private one.
func TestLinkDirFlag(t *testing.T) {
	clearEnv(t)
	t.Setenv("AIRLOCK_REDIS_URL", "redis://127.0.0.1:1/0")
	var errb bytes.Buffer
	t.Setenv("AIRLOCK_LINK_DIR", "")
	if sf, _, _, ok := parseWorkerFlags(nil, &errb); !ok || sf.linkDir != "" {
		t.Fatalf("default: %q %v %s", sf.linkDir, ok, errb.String())
	}
	t.Setenv("AIRLOCK_LINK_DIR", "/run/x-link")
	if sf, _, _, ok := parseWorkerFlags(nil, &errb); !ok || sf.linkDir != "/run/x-link" {
		t.Fatalf("env: %q %v %s", sf.linkDir, ok, errb.String())
	}
	if sf, _, _, ok := parseWorkerFlags([]string{"--link-dir", "/run/y-link"}, &errb); !ok || sf.linkDir != "/run/y-link" {
		t.Fatalf("flag over env: %q %v %s", sf.linkDir, ok, errb.String())
	}
}
