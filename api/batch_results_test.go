package api

import (
	"encoding/json"
	"fmt"
	"github.com/airlock-dev/airlock/internal/testscale"
	"strings"
	"testing"
	"time"
)

// TestBatchResultsStream: /results answers one JSONL line per item and
// /errors (like ?view=errors) only the failed ones, as application/jsonl;
// an unknown batch is 404 before any line.
func TestBatchResultsStream(t *testing.T) {
	h := newHarness(t, nil)
	var jsonl strings.Builder
	for i := 0; i < 7; i++ {
		code := fmt.Sprintf("print(%d)", i)
		if i%3 == 0 {
			code = "raise ValueError()"
		}
		fmt.Fprintf(&jsonl, `{"custom_id":"c%d","tool_call":{"type":"function","function":{"name":"run_python","arguments":{"code":%q}}}}`+"\n", i, code)
	}
	id := h.do(keyAlice, "POST", "/v1/batches", jsonl.String(), "Content-Type", "application/jsonl").must(t, 201).JSON(t)["id"].(string)
	for deadline := time.Now().Add(testscale.D(10 * time.Second)); ; time.Sleep(testscale.D(20 * time.Millisecond)) {
		if h.do(keyAlice, "GET", "/v1/batches/"+id, nil).must(t, 200).JSON(t)["status"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the batch did not complete")
		}
	}
	lines := func(path string) map[string]string {
		r := h.do(keyAlice, "GET", path, nil).must(t, 200)
		if ct := r.Header.Get("Content-Type"); ct != "application/jsonl" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		out := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(r.Body)), "\n") {
			if l == "" {
				continue
			}
			var v struct {
				CustomID string `json:"custom_id"`
				Status   string `json:"status"`
			}
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("%s: line %q: %v", path, l, err)
			}
			if _, dup := out[v.CustomID]; dup {
				t.Fatalf("%s: two lines for %s", path, v.CustomID)
			}
			out[v.CustomID] = v.Status
		}
		return out
	}
	all := lines("/v1/batches/" + id + "/results")
	if len(all) != 7 || all["c1"] != "ok" || all["c0"] != "error" {
		t.Fatalf("results %v, want c0..c6 with c0, c3, c6 failed", all)
	}
	for _, path := range []string{"/v1/batches/" + id + "/errors", "/v1/batches/" + id + "/results?view=errors"} {
		if errs := lines(path); len(errs) != 3 || errs["c0"] != "error" || errs["c3"] != "error" || errs["c6"] != "error" {
			t.Errorf("%s: %v, want c0, c3, c6", path, errs)
		}
	}
	h.do(keyAlice, "GET", "/v1/batches/batch_none/results", nil).must(t, 404)
	h.do(keyBob, "GET", "/v1/batches/"+id+"/results", nil).must(t, 404)
}

// TestBatchListHasMore: GET /v1/batches?limit=N says has_more when the
// caller has more than N batches, newest first.
func TestBatchListHasMore(t *testing.T) {
	h := newHarness(t, nil)
	item := `{"custom_id":"c","tool_call":{"type":"function","function":{"name":"run_python","arguments":{"code":"print(1)"}}}}`
	for i := 0; i < 3; i++ {
		h.do(keyAlice, "POST", "/v1/batches", item, "Content-Type", "application/jsonl").must(t, 201)
	}
	for _, c := range []struct {
		limit, n int
		more     bool
	}{{2, 2, true}, {3, 3, false}, {5, 3, false}} {
		got := h.do(keyAlice, "GET", fmt.Sprintf("/v1/batches?limit=%d", c.limit), nil).must(t, 200).JSON(t)
		if data, _ := got["data"].([]any); len(data) != c.n || got["has_more"] != c.more {
			t.Errorf("limit %d: %d batches, has_more %v; want %d, %v", c.limit, len(data), got["has_more"], c.n, c.more)
		}
	}
}

// TestBatchMapSpecPrettyPrinted: a map spec is read as one, on one line
// or pretty-printed over several (it was taken for JSONL and refused as
// "line 1: not a valid item").
func TestBatchMapSpecPrettyPrinted(t *testing.T) {
	h := newHarness(t, nil)
	spec := map[string]any{"each": "*", "input": "sales",
		"tool_call": map[string]any{"type": "function", "function": map[string]any{"name": "run_python", "arguments": map[string]any{"code": "print(1)"}}}}
	compact, _ := json.Marshal(spec)
	pretty, _ := json.MarshalIndent(spec, "", "  ")
	for _, body := range [][]byte{compact, pretty} {
		r := h.do(keyAlice, "POST", "/v1/batches", string(body), "Content-Type", "application/json").must(t, 400)
		if !strings.Contains(string(r.Body), "matched no folders") {
			t.Errorf("map spec %s: %s, want it read as a map spec (the empty input folder matches nothing)", body, r.Body)
		}
	}
}
