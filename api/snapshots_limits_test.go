package api

import "testing"

// TestRestoredSessionAnswersItsLimit: a session opened from a snapshot or
// forked answers its per-call limit as timeout_seconds, as POST and GET
// /v1/sessions do for every other session: the snapshot's limit, or the
// one the restore asks for.
func TestRestoredSessionAnswersItsLimit(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"limits": map[string]any{"timeout_seconds": 7}}).must(t, 201).JSON(t)["id"].(string)
	snap := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/snapshot", nil).must(t, 201).JSON(t)["snapshot_id"].(string)
	for name, got := range map[string]map[string]any{
		"restore": h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"snapshot": snap}).must(t, 201).JSON(t),
		"fork":    h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/fork", nil).must(t, 201).JSON(t),
	} {
		if got["timeout_seconds"] != float64(7) {
			t.Fatalf("%s answers timeout_seconds %v, want 7: %v", name, got["timeout_seconds"], got)
		}
		if g := h.do(keyAlice, "GET", "/v1/sessions/"+got["id"].(string), nil).must(t, 200).JSON(t); g["timeout_seconds"] != float64(7) {
			t.Fatalf("GET of the %s's session: timeout_seconds %v", name, g["timeout_seconds"])
		}
	}
	got := h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"snapshot": snap, "limits": map[string]any{"timeout_seconds": 5}}).must(t, 201).JSON(t)
	if got["timeout_seconds"] != float64(5) {
		t.Fatalf("restore with limits answers timeout_seconds %v, want 5", got["timeout_seconds"])
	}
}
