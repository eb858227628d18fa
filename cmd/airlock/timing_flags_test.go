package main

import (
	"bytes"
	"testing"
	"time"
)

// TestQueueAndBatchTimingFlags: --visibility-timeout (serve and worker)
// and --batch-lease (serve) reach the queue and batch settings, from the
// flag or the environment, and default to 0 (the packages' defaults).
func TestQueueAndBatchTimingFlags(t *testing.T) {
	clearEnv(t)
	t.Setenv("AIRLOCK_VISIBILITY_TIMEOUT", "")
	t.Setenv("AIRLOCK_BATCH_LEASE", "")
	var errb bytes.Buffer
	o, code, ok := parseServeFlags([]string{"--insecure-local"}, envLookup, &errb)
	if !ok || o.stack.visibility != 0 || o.batchLease != 0 {
		t.Fatalf("defaults: exit %d visibility %v lease %v: %s", code, o.stack.visibility, o.batchLease, errb.String())
	}
	o, code, ok = parseServeFlags([]string{"--insecure-local", "--visibility-timeout", "5s", "--batch-lease", "3s"}, envLookup, &errb)
	if !ok || o.stack.visibility != 5*time.Second || o.batchLease != 3*time.Second {
		t.Errorf("flags: exit %d visibility %v lease %v: %s", code, o.stack.visibility, o.batchLease, errb.String())
	}
	t.Setenv("AIRLOCK_REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv("AIRLOCK_VISIBILITY_TIMEOUT", "7s")
	if sf, _, _, ok := parseWorkerFlags(nil, &errb); !ok || sf.visibility != 7*time.Second {
		t.Errorf("worker from AIRLOCK_VISIBILITY_TIMEOUT=7s: visibility %v", sf.visibility)
	}
}
