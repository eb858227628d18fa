package api

import (
	"github.com/airlock-dev/airlock/internal/testscale"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestOpenAPIConformance drives every documented operation through one
// server and checks each answer against openapi.json (the harness checks
// every answer of every test the same way). It fails when an operation of
// the document was never answered successfully, or a documented error
// status of the tool-call route was never produced.
func TestOpenAPIConformance(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.openSession(keyAlice)
	h.do(keyAlice, "GET", "/", nil)
	h.do(keyAlice, "GET", "/ui/app.js", nil)
	h.do(keyAlice, "GET", "/ui/style.css", nil)
	h.do(keyAlice, "GET", "/ui/missing.js", nil)
	h.do("", "GET", "/healthz", nil)
	h.do("", "GET", "/readyz", nil)
	h.do("", "GET", "/metrics", nil)
	h.do("", "GET", "/openapi.json", nil)
	h.do("", "GET", "/v1/info", nil)
	h.do(keyAlice, "GET", "/v1/tools", nil)
	one := h.do(keyAlice, "POST", "/v1/tool-calls", py("plot")).JSON(t)
	h.do(keyAlice, "GET", one["result"].(map[string]any)["artifacts"].([]any)[0].(map[string]any)["url"].(string), nil)
	h.do(keyAlice, "GET", "/v1/sessions/"+sid, nil)
	h.do(keyAlice, "GET", "/v1/sessions", nil)
	h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/interrupt", nil)
	h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/restart", nil)
	h.do(keyAlice, "POST", "/v1/tool-calls?stream=true", py("x"))
	in := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/tool-calls", py("plot")).JSON(t)
	h.do(keyAlice, "GET", in["result"].(map[string]any)["artifacts"].([]any)[0].(map[string]any)["url"].(string), nil)
	h.do(keyAlice, "PUT", "/v1/sessions/"+sid+"/files/data.csv", []byte("a,b\n1,2\n"))
	h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/files/data.csv", nil)
	h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/files", nil)
	h.do(keyAlice, "PUT", "/v1/sessions/"+sid+"/notebook", map[string]any{"cells": []any{map[string]any{"source": "1"}}, "version": 0})
	h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/notebook", nil)
	rid := h.startRun(keyAlice, map[string]any{"goal": "x", "session_id": sid})
	h.do(keyAlice, "GET", "/v1/runs/"+rid, nil)
	h.do(keyAlice, "GET", "/v1/runs/"+rid+"/events", nil, "Last-Event-ID", "2")
	h.runs.script = approvalScript
	rid2 := h.startRun(keyAlice, map[string]any{"goal": "y"})
	h.do(keyAlice, "POST", "/v1/runs/"+rid2+"/approvals/apv-1", map[string]any{"approve": true, "reason": "fine"})
	h.do(keyAlice, "POST", "/v1/tool-calls", py("approval"))
	h.do(keyAlice, "POST", "/v1/tool-calls/approvals/tok-1", map[string]any{"approve": true})
	rid3 := h.startRun(keyAlice, map[string]any{"goal": "z"})
	h.do(keyAlice, "POST", "/v1/runs/"+rid3+"/cancel", nil)
	h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/complete", map[string]any{"code": "area(", "cursor_pos": 5})
	h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/variables", nil)
	snap := conformSnapshots(t, h, sid)
	h.do(keyAlice, "DELETE", "/v1/snapshots/"+snap, nil)
	h.do(keyAlice, "DELETE", "/v1/sessions/"+sid, nil)
	conformBatches(t, h)

	// Every documented error status of the tool-call route.
	h.do(keyAlice, "POST", "/v1/tool-calls", `{`)                                                                                    // 400
	h.do("", "POST", "/v1/tool-calls", py("x"))                                                                                      // 401
	h.do(keyAlice, "POST", "/v1/tool-calls", map[string]any{"function": map[string]any{"name": "run_python"}, "session_id": "nope"}) // 404
	h.do(keyAlice, "POST", "/v1/tool-calls", py("lost"))                                                                             // 409
	h.do(keyAlice, "POST", "/v1/tool-calls", py(strings.Repeat("x", 2<<20)))                                                         // 413
	h.do(keyAlice, "POST", "/v1/tool-calls", py("busy"))                                                                             // 429
	h.do(keyAlice, "POST", "/v1/tool-calls", py("internal"))                                                                         // 500
	h.do(keyAlice, "POST", "/v1/tool-calls", py("unavailable"))                                                                      // 503
	ht := newHarness(t, func(c *Config, d *Deps) { c.ToolCallTimeout = 20 * time.Millisecond })
	ht.do(keyAlice, "POST", "/v1/tool-calls", py("sleep")) // 504
	for k := range ht.oa.seen {
		h.oa.seen[k] = true
	}
	for k := range conformEnvironments(t) {
		h.oa.seen[k] = true
	}
	for k := range conformGateways(t) {
		h.oa.seen[k] = true
	}

	var missing []string
	for path, item := range h.oa.doc.Paths.Map() {
		for method, op := range item.Operations() {
			ok := false
			for k := range h.oa.seen {
				if strings.HasPrefix(k, method+" "+path+" "+successPrefix(op)) {
					ok = true
				}
			}
			if !ok {
				missing = append(missing, method+" "+path)
			}
		}
	}
	for _, code := range []string{"400", "401", "404", "409", "413", "429", "500", "503", "504"} {
		if !h.oa.seen["POST /v1/tool-calls "+code] {
			missing = append(missing, "POST /v1/tool-calls "+code)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("never validated against the document:\n%s", strings.Join(missing, "\n"))
	}
	if len(h.oa.seen) < 30 {
		t.Fatalf("only %d validated exchanges", len(h.oa.seen))
	}
}

// conformBatches drives every /v1/batches operation once.
func conformBatches(t *testing.T, h *harness) {
	jsonl := `{"custom_id":"a","tool_call":{"type":"function","function":{"name":"run_python","arguments":{"code":"x"}}}}` + "\n" +
		`{"custom_id":"b","method":"POST","url":"/v1/tool-calls","body":{"function":{"name":"run_python","arguments":{"code":"raise"}}}}` + "\n"
	id := h.do(keyAlice, "POST", "/v1/batches", jsonl, "Content-Type", "application/jsonl").must(t, 201).JSON(t)["id"].(string)
	h.do(keyAlice, "POST", "/v1/batches", `{"custom_id":"a"}`, "Content-Type", "application/jsonl").must(t, 400)
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for h.do(keyAlice, "GET", "/v1/batches/"+id, nil).JSON(t)["status"] != "completed" {
		if time.Now().After(deadline) {
			t.Fatal("batch did not complete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.do(keyAlice, "GET", "/v1/batches", nil).must(t, 200)
	h.do(keyAlice, "GET", "/v1/batches/"+id+"/results", nil).must(t, 200)
	h.do(keyAlice, "GET", "/v1/batches/"+id+"/errors", nil).must(t, 200)
	h.do(keyAlice, "GET", "/v1/batches/"+id+"/summary", nil).must(t, 200)
	h.do(keyAlice, "GET", "/v1/batches/"+id+"/report", nil).must(t, 200)
	h.do(keyAlice, "GET", "/v1/batches/"+id+"/events", nil, "Last-Event-ID", "1").must(t, 200)
	h.do(keyAlice, "POST", "/v1/batches/"+id+"/retry", nil).must(t, 200)
	h.do(keyAlice, "POST", "/v1/batches/"+id+"/cancel", nil).must(t, 200)
	h.do(keyBob, "GET", "/v1/batches/"+id, nil).must(t, 404)
}
