package api

import (
	"strings"
	"testing"
)

// TestRestoreOpensInTheSnapshotsEnvironment: a session opened in a custom
// environment, snapshotted, comes back (restore and fork) in that same
// environment, not in the python image that lacks its packages; the answer
// names it.
func TestRestoreOpensInTheSnapshotsEnvironment(t *testing.T) {
	h, _ := envHarness(t)
	sid := h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"environment": "geo"}).must(t, 201).JSON(t)["id"].(string)
	snap := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/snapshot", nil).must(t, 201).JSON(t)["snapshot_id"].(string)
	if env := h.do(keyAlice, "GET", "/v1/snapshots/"+snap, nil).must(t, 200).JSON(t)["environment"]; env != "geo" {
		t.Fatalf("the snapshot's environment: %v", env)
	}
	for name, got := range map[string]map[string]any{
		"restore": h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"snapshot": snap}).must(t, 201).JSON(t),
		"fork":    h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/fork", nil).must(t, 201).JSON(t),
	} {
		id := got["id"].(string)
		h.sess.mu.Lock()
		env := h.sess.openedIn[id]
		h.sess.mu.Unlock()
		if env != "geo" || got["environment"] != "geo" {
			t.Fatalf("%s opened its session in %q (answer %v), want geo", name, env, got["environment"])
		}
	}
}

// TestRestoreNamingAnotherEnvironmentIsRefused: POST /v1/sessions with a
// snapshot and an "environment" other than the snapshot's is 400 naming
// both, not a session silently opened elsewhere; naming the snapshot's own
// environment is fine.
func TestRestoreNamingAnotherEnvironmentIsRefused(t *testing.T) {
	h, _ := envHarness(t)
	sid := h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"environment": "geo"}).must(t, 201).JSON(t)["id"].(string)
	snap := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/snapshot", nil).must(t, 201).JSON(t)["snapshot_id"].(string)
	res := h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"snapshot": snap, "environment": "python"})
	if res.Code != 400 || !strings.Contains(string(res.Body), `\"python\"`) || !strings.Contains(string(res.Body), `\"geo\"`) {
		t.Fatalf("restore naming python for a geo snapshot: %d %s", res.Code, res.Body)
	}
	h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"snapshot": snap, "environment": "geo"}).must(t, 201)
}
