package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// startRun starts a run as key and returns its id.
func (h *harness) startRun(key string, body map[string]any) string {
	h.t.Helper()
	return h.do(key, "POST", "/v1/runs", body).must(h.t, http.StatusCreated).JSON(h.t)["id"].(string)
}

func TestRunStartAndGet(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.openSession(keyAlice)
	m := h.do(keyAlice, "POST", "/v1/runs", map[string]any{"goal": "sum the sales", "model": "m1", "max_steps": 4, "session_id": sid, "input": "sales"}).
		must(t, http.StatusCreated).JSON(t)
	req := h.runs.lastReq
	if req.Owner != "alice" || req.Goal != "sum the sales" || req.Model != "m1" || req.MaxSteps != 4 || req.SessionID != sid || req.Mount != h.srv.cfg.InputFolders["sales"] {
		t.Fatalf("run request %+v", req)
	}
	id := m["id"].(string)
	v := h.do(keyAlice, "GET", "/v1/runs/"+id, nil).must(t, http.StatusOK).JSON(t)
	if v["status"] != "done" || !strings.Contains(v["final_answer"].(string), "1234") {
		t.Fatalf("view %v", v)
	}
	h.do(keyAlice, "POST", "/v1/runs", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}).must(t, http.StatusCreated)
	if !strings.Contains(string(h.runs.lastReq.Messages), `"hi"`) {
		t.Fatalf("messages %s", h.runs.lastReq.Messages)
	}
	h.do(keyAlice, "GET", "/v1/runs/run_nope", nil).must(t, http.StatusNotFound)
}

func TestRunStartBadRequests(t *testing.T) {
	h := newHarness(t, nil)
	cases := map[string]any{
		"nothing":      map[string]any{},
		"both":         map[string]any{"goal": "x", "messages": []any{}},
		"not array":    `{"messages": {"role": "user"}}`,
		"neg steps":    map[string]any{"goal": "x", "max_steps": -1},
		"host path":    map[string]any{"goal": "x", "input": "/home"},
		"unknown":      map[string]any{"goal": "x", "mount": "/home"},
		"malformed":    `{"goal": `,
		"blank goal":   map[string]any{"goal": "   "},
		"null message": `{"messages": null}`,
	}
	for name, body := range cases {
		if r := h.do(keyAlice, "POST", "/v1/runs", body); r.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, r.Code, r.Body)
		}
	}
	h.do(keyAlice, "POST", "/v1/runs", map[string]any{"goal": "x", "session_id": "ses_nope"}).must(t, http.StatusNotFound)
}

func TestRunNoModel(t *testing.T) {
	h := newHarness(t, nil)
	h.runs.configured = false
	r := h.do(keyAlice, "POST", "/v1/runs", map[string]any{"goal": "x"}).must(t, http.StatusServiceUnavailable)
	if r.errCode(t) != core.ErrNoModel || !strings.Contains(string(r.Body), "OPENAI_BASE_URL") {
		t.Fatal(string(r.Body))
	}
	// The manager says so itself (configured reported late).
	h.runs.configured = true
	h.runs.startErr = errFakeNoModel
	if r := h.do(keyAlice, "POST", "/v1/runs", map[string]any{"goal": "x"}); r.Code != http.StatusServiceUnavailable || r.errCode(t) != core.ErrNoModel {
		t.Fatal(string(r.Body))
	}
	h.runs.startErr = core.ErrBusy
	h.do(keyAlice, "POST", "/v1/runs", map[string]any{"goal": "x"}).must(t, http.StatusTooManyRequests)
	h.runs.startErr = errors.New("boom")
	h.do(keyAlice, "POST", "/v1/runs", map[string]any{"goal": "x"}).must(t, http.StatusInternalServerError)

	hn := newHarness(t, func(c *Config, d *Deps) { d.Runs = nil })
	for _, p := range []string{"/v1/runs/x", "/v1/runs/x/events"} {
		if r := hn.do(keyAlice, "GET", p, nil); r.Code != http.StatusServiceUnavailable || r.errCode(t) != core.ErrNoModel {
			t.Errorf("%s: %d", p, r.Code)
		}
	}
	hn.do(keyAlice, "POST", "/v1/runs", map[string]any{"goal": "x"}).must(t, http.StatusServiceUnavailable)
	hn.do(keyAlice, "POST", "/v1/runs/x/cancel", nil).must(t, http.StatusServiceUnavailable)
}

func TestRunCancel(t *testing.T) {
	h := newHarness(t, nil)
	h.runs.script = approvalScript
	id := h.startRun(keyAlice, map[string]any{"goal": "x"})
	m := h.do(keyAlice, "POST", "/v1/runs/"+id+"/cancel", nil).must(t, http.StatusOK).JSON(t)
	if m["status"] != "cancelled" {
		t.Fatalf("%v", m)
	}
	h.do(keyAlice, "POST", "/v1/runs/"+id+"/cancel", nil).must(t, http.StatusConflict)
	h.do(keyAlice, "POST", "/v1/runs/run_nope/cancel", nil).must(t, http.StatusNotFound)
}

func TestRunApprovals(t *testing.T) {
	h := newHarness(t, nil)
	h.runs.script = approvalScript
	id := h.startRun(keyAlice, map[string]any{"goal": "list files"})
	v := h.do(keyAlice, "GET", "/v1/runs/"+id, nil).must(t, http.StatusOK).JSON(t)
	if v["status"] != "waiting_approval" || v["pending_approvals"].([]any)[0] != "apv-1" {
		t.Fatalf("%v", v)
	}
	base := "/v1/runs/" + id + "/approvals/"
	h.do(keyAlice, "POST", base+"apv-1", map[string]any{"reason": "no decision"}).must(t, http.StatusBadRequest)
	h.do(keyAlice, "POST", base+"apv-1", `{"approve": "yes"}`).must(t, http.StatusBadRequest)
	h.do(keyAlice, "POST", base+"wrong", map[string]any{"approve": true}).must(t, http.StatusNotFound)
	h.do(keyBob, "POST", base+"apv-1", map[string]any{"approve": true}).must(t, http.StatusNotFound)
	v = h.do(keyAlice, "POST", base+"apv-1", map[string]any{"approve": true}).must(t, http.StatusOK).JSON(t)
	if v["status"] != "done" || v["final_answer"] != "The folder is empty." {
		t.Fatalf("%v", v)
	}
	h.do(keyAlice, "POST", base+"apv-1", map[string]any{"approve": false}).must(t, http.StatusNotFound) // resolved once
}

// sseEvents parses an SSE body into (id, type, data) triples.
func sseEvents(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, block := range strings.Split(string(body), "\n\n") {
		var e sseEvent
		for _, line := range strings.Split(block, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "id":
				e.ID = v
			case "event":
				e.Type = v
			case "data":
				e.Data = v
			}
		}
		if e.Data != "" {
			out = append(out, e)
		}
	}
	return out
}

type sseEvent struct{ ID, Type, Data string }

func TestRunEventsStreamAndResume(t *testing.T) {
	h := newHarness(t, nil)
	id := h.startRun(keyAlice, map[string]any{"goal": "x"})
	r := h.do(keyAlice, "GET", "/v1/runs/"+id+"/events", nil).must(t, http.StatusOK)
	if r.Header.Get("Content-Type") != "text/event-stream" || r.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v", r.Header)
	}
	all := sseEvents(t, r.Body)
	if len(all) != 7 || all[0].ID != "1" || all[0].Type != "step_started" || all[6].Type != "run_finished" {
		t.Fatalf("events %+v", all)
	}
	for i, e := range all {
		var d struct {
			Seq  int    `json:"seq"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(e.Data), &d); err != nil || d.Seq != i+1 || d.Type != e.Type {
			t.Fatalf("event %d: %+v (%v)", i, e, err)
		}
	}
	// Resume after the third event, by header and by query.
	for _, r := range []response{
		h.do(keyAlice, "GET", "/v1/runs/"+id+"/events", nil, "Last-Event-ID", "3"),
		h.do(keyAlice, "GET", "/v1/runs/"+id+"/events?after=3", nil),
	} {
		rest := sseEvents(t, r.must(t, http.StatusOK).Body)
		if len(rest) != 4 || rest[0].ID != "4" || rest[0].Type != "tool_result" || rest[3].ID != "7" {
			t.Fatalf("resumed events %+v", rest)
		}
	}
	if rest := sseEvents(t, h.do(keyAlice, "GET", "/v1/runs/"+id+"/events", nil, "Last-Event-ID", "7").Body); len(rest) != 0 {
		t.Fatalf("after the last event: %+v", rest)
	}
	h.do(keyAlice, "GET", "/v1/runs/"+id+"/events", nil, "Last-Event-ID", "x").must(t, http.StatusBadRequest)
	h.do(keyAlice, "GET", "/v1/runs/"+id+"/events?after=-2", nil).must(t, http.StatusBadRequest)
	h.do(keyAlice, "GET", "/v1/runs/run_nope/events", nil).must(t, http.StatusNotFound)
	h.do(keyBob, "GET", "/v1/runs/"+id+"/events", nil).must(t, http.StatusNotFound)
}

// Artifact bytes inside a tool_result event become download URLs.
func TestRunEventsArtifactsBecomeURLs(t *testing.T) {
	h := newHarness(t, nil)
	id := h.startRun(keyAlice, map[string]any{"goal": "x"})
	evs := sseEvents(t, h.do(keyAlice, "GET", "/v1/runs/"+id+"/events", nil).Body)
	var d struct {
		Data struct {
			Artifacts []map[string]any `json:"artifacts"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(evs[3].Data), &d); err != nil || len(d.Data.Artifacts) != 1 {
		t.Fatalf("tool_result %s (%v)", evs[3].Data, err)
	}
	a := d.Data.Artifacts[0]
	url, _ := a["url"].(string)
	if a["data"] != nil || !strings.HasPrefix(url, "/v1/artifacts/") {
		t.Fatalf("artifact %v", a)
	}
	h.do(keyAlice, "GET", url, nil).must(t, http.StatusOK)
	h.do(keyBob, "GET", url, nil).must(t, http.StatusNotFound)
	// A replay (resume) gives the same URL rather than storing again.
	evs2 := sseEvents(t, h.do(keyAlice, "GET", "/v1/runs/"+id+"/events", nil, "Last-Event-ID", "3").Body)
	if !strings.Contains(evs2[0].Data, url) {
		t.Fatalf("replayed artifact url differs: %s", evs2[0].Data)
	}
}

// A live stream delivers events released after it opened (approval).
func TestRunEventsLive(t *testing.T) {
	h := newHarness(t, nil)
	h.runs.script = approvalScript
	id := h.startRun(keyAlice, map[string]any{"goal": "x"})
	done := make(chan response)
	go func() { done <- h.do(keyAlice, "GET", "/v1/runs/"+id+"/events", nil) }()
	h.do(keyAlice, "POST", "/v1/runs/"+id+"/approvals/apv-1", map[string]any{"approve": true}).must(t, http.StatusOK)
	evs := sseEvents(t, (<-done).must(t, http.StatusOK).Body)
	if len(evs) != 5 || evs[1].Type != "approval_needed" || evs[4].Type != "run_finished" {
		t.Fatalf("events %+v", evs)
	}
}
