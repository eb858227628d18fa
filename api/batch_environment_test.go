package api

import (
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestBatchLevelEnvironment: POST /v1/batches?environment= is the
// environment of the batch's items that name none, an item's own wins;
// an unknown one is 404 and one the key may not use 403, both naming it.
func TestBatchLevelEnvironment(t *testing.T) {
	h, _ := envHarness(t)
	jsonl := `{"custom_id":"a","tool_call":{"type":"function","function":{"name":"run_python","arguments":{"code":"print(1)"}}}}` + "\n" +
		`{"custom_id":"b","tool_call":{"type":"function","environment":"python","function":{"name":"run_python","arguments":{"code":"print(2)"}}}}` + "\n"
	r := h.do(keyAlice, "POST", "/v1/batches?environment=nope", jsonl, "Content-Type", "application/jsonl")
	if r.Code != 404 || !strings.Contains(string(r.Body), "nope") {
		t.Errorf("unknown batch environment: %d %s, want 404 naming it", r.Code, r.Body)
	}
	r = h.do(keyBob, "POST", "/v1/batches?environment=geo", jsonl, "Content-Type", "application/jsonl")
	if r.Code != 403 || !strings.Contains(string(r.Body), "geo") {
		t.Errorf("forbidden batch environment: %d %s, want 403 naming it", r.Code, r.Body)
	}
	id := h.do(keyAlice, "POST", "/v1/batches?environment=geo", jsonl, "Content-Type", "application/jsonl").must(t, 201).JSON(t)["id"].(string)
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); ; time.Sleep(testscale.D(20 * time.Millisecond)) {
		if h.do(keyAlice, "GET", "/v1/batches/"+id, nil).must(t, 200).JSON(t)["status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch did not complete")
		}
	}
	h.disp.mu.Lock()
	defer h.disp.mu.Unlock()
	got := map[string]string{}
	for _, c := range h.disp.calls {
		got[string(c.Arguments)] = c.Environment
	}
	if len(h.disp.calls) != 2 || got[`{"code":"print(1)"}`] != "geo" || got[`{"code":"print(2)"}`] != "python" {
		t.Errorf("item environments %v, want geo for the item naming none and python for the one naming it", got)
	}
}
