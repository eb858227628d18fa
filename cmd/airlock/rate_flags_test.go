package main

import (
	"bytes"
	"testing"

	"github.com/airlock-dev/airlock/api"
)

// TestServeLocalRate: --insecure-local has no per-key rate limit unless
// --rate sets one (issue 33: 20 requests/s capped one local user's
// clients); keyed serve keeps the default.
func TestServeLocalRate(t *testing.T) {
	clearEnv(t)
	var errb bytes.Buffer
	o, _, ok := parseServeFlags([]string{"--insecure-local"}, envLookup, &errb)
	if !ok || o.api.RatePerSecond >= 0 {
		t.Fatalf("insecure-local without --rate: rate %v (ok %v: %s), want unlimited", o.api.RatePerSecond, ok, errb.String())
	}
	o, _, ok = parseServeFlags([]string{"--insecure-local", "--rate", "5"}, envLookup, &errb)
	if !ok || o.api.RatePerSecond != 5 {
		t.Fatalf("insecure-local --rate 5: rate %v (ok %v: %s)", o.api.RatePerSecond, ok, errb.String())
	}
	t.Setenv("AIRLOCK_API_KEYS", "rate-test-key-0123456789")
	o, _, ok = parseServeFlags(nil, envLookup, &errb)
	if !ok || o.api.RatePerSecond != api.DefaultConfig().RatePerSecond {
		t.Fatalf("keyed serve: rate %v (ok %v: %s), want the default %v", o.api.RatePerSecond, ok, errb.String(), api.DefaultConfig().RatePerSecond)
	}
}
