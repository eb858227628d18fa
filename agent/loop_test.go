package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

func TestFinalAnswerAndUsageSummed(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		h := newHarness(t, Config{}, stream, nil,
			func(agenttest.Request) agenttest.Reply {
				return agenttest.Reply{Calls: []agenttest.Call{py("c1", "print(1)")},
					Usage: &agenttest.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110}}
			},
			func(agenttest.Request) agenttest.Reply {
				return agenttest.Reply{Content: "the answer is 1",
					Usage: &agenttest.Usage{PromptTokens: 150, CompletionTokens: 5, TotalTokens: 155}}
			},
		)
		v, evs := h.run("compute")
		h.noServerErrors()
		if v.Status != wire.RunDone || v.FinalAnswer != "the answer is 1" || v.Steps != 2 {
			t.Fatalf("view = %+v", v)
		}
		u := v.Usage
		if u.PromptTokens != 250 || u.CompletionTokens != 15 || u.TotalTokens != 265 || u.Estimated {
			t.Fatalf("usage = %+v", u)
		}
		if u.ToolSchemaTokens <= 0 || u.ToolSchemaTokens%2 != 0 { // same schema on both steps
			t.Fatalf("schema tokens = %d", u.ToolSchemaTokens)
		}
		want := []wire.EventType{wire.EventStepStarted, wire.EventAssistantMessage, wire.EventToolCall, wire.EventToolResult,
			wire.EventStepStarted, wire.EventAssistantMessage, wire.EventFinalAnswer, wire.EventRunFinished}
		if fmt.Sprint(types(evs)) != fmt.Sprint(want) {
			t.Fatalf("events = %v", types(evs))
		}
		step1 := ofType(evs, wire.EventAssistantMessage)[0]["usage"].(map[string]any)
		if step1["total_tokens"].(float64) != 110 {
			t.Fatalf("step usage = %v", step1)
		}
		reqs := h.srv.Requests()
		if reqs[0].Stream != stream || reqs[0].Model != "test-model" || reqs[0].Messages[0].Role != "system" {
			t.Fatalf("first request = %+v", reqs[0])
		}
		if len(reqs[0].Tools) != 2 {
			t.Fatalf("tools offered = %v", reqs[0].Tools)
		}
	})
}

func TestStepLimitForcesFinalCallWithoutTools(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		h := newHarness(t, Config{MaxSteps: 2}, stream, nil,
			agenttest.CallTools(py("a", "1")),
			agenttest.CallTools(py("b", "2")),
			agenttest.Say("concluded from what I have"),
		)
		v, evs := h.run("never finish")
		h.noServerErrors()
		if v.Status != wire.RunMaxSteps || v.FinalAnswer != "concluded from what I have" || v.Steps != 3 {
			t.Fatalf("view = %+v", v)
		}
		reqs := h.srv.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests", len(reqs))
		}
		for i := 0; i < 2; i++ {
			if len(reqs[i].Tools) == 0 {
				t.Fatalf("request %d offered no tools", i)
			}
		}
		last := reqs[2]
		if len(last.Tools) != 0 || strings.Contains(string(last.Body), `"tools"`) {
			t.Fatalf("the final request offered tools: %s", last.Body)
		}
		if m := last.Messages[len(last.Messages)-1]; m.Role != "user" || !strings.Contains(m.Content, "do not call any tool") {
			t.Fatalf("final request ends with %+v", m)
		}
		if got := len(h.tools.recorded()); got != 2 {
			t.Fatalf("%d tool runs", got)
		}
		if fin := ofType(evs, wire.EventFinalAnswer); len(fin) != 1 {
			t.Fatalf("final answers: %v", fin)
		}
	})
}

func TestStepLimitIgnoresToolCallsInFinalCall(t *testing.T) {
	h := newHarness(t, Config{MaxSteps: 1}, false, nil,
		agenttest.CallTools(py("a", "1")),
		func(agenttest.Request) agenttest.Reply {
			return agenttest.Reply{Content: "partial", Calls: []agenttest.Call{py("b", "2")}}
		},
	)
	v, _ := h.run("x")
	if v.Status != wire.RunMaxSteps || v.FinalAnswer != "partial" || len(h.tools.recorded()) != 1 {
		t.Fatalf("view = %+v, runs = %d", v, len(h.tools.recorded()))
	}
}

// TestParallelCallsConcurrentYetInOrder: every fake tool call blocks until
// all N have arrived (so sequential execution would never finish), and
// they complete in reverse order; the tool messages must still follow the
// model's order with matching ids.
func TestParallelCallsConcurrentYetInOrder(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		const n = 4
		var mu sync.Mutex
		arrived := 0
		all := make(chan struct{})
		finished := make([]chan struct{}, n)
		for i := range finished {
			finished[i] = make(chan struct{})
		}
		tools := &fakeTools{run: func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
			mu.Lock()
			arrived++
			if arrived == n {
				close(all)
			}
			mu.Unlock()
			var i int
			fmt.Sscanf(c.ID, "c%d", &i)
			select {
			case <-all:
			case <-ctx.Done():
				return dispatcher.Result{Status: dispatcher.StatusInternal, Content: "cancelled"}
			case <-time.After(time.Minute): // only a deadlock guard
				return dispatcher.Result{Status: dispatcher.StatusInternal, Content: "calls were not concurrent"}
			}
			if i+1 < n { // finish in reverse order
				<-finished[i+1]
			}
			defer close(finished[i])
			return dispatcher.Result{Status: dispatcher.StatusOK, Content: "result " + c.ID}
		}}
		var calls []agenttest.Call
		for i := 0; i < n; i++ {
			calls = append(calls, py(fmt.Sprintf("c%d", i), fmt.Sprintf("print(%d)", i)))
		}
		h := newHarness(t, Config{}, stream, tools, agenttest.CallTools(calls...), agenttest.Say("done"))
		v, evs := h.run("parallel")
		h.noServerErrors()
		if v.Status != wire.RunDone {
			t.Fatalf("view = %+v", v)
		}
		tm := toolMessages(h.srv.Requests()[1])
		if len(tm) != n {
			t.Fatalf("%d tool messages", len(tm))
		}
		for i, m := range tm {
			id := fmt.Sprintf("c%d", i)
			if m.ToolCallID != id || m.Content != "result "+id {
				t.Fatalf("tool message %d = %+v", i, m)
			}
		}
		if res := ofType(evs, wire.EventToolResult); len(res) != n {
			t.Fatalf("result events: %v", res)
		}
	})
}

func TestMissingAndDuplicateIDs(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		h := newHarness(t, Config{}, stream, nil,
			agenttest.CallTools(py("", "1"), py("dup", "2"), py("dup", "3")),
			agenttest.CallTools(py("dup", "4")), // reused across turns
			agenttest.Say("ok"),
		)
		v, _ := h.run("ids")
		h.noServerErrors()
		if v.Status != wire.RunDone {
			t.Fatalf("view = %+v", v)
		}
		seen := map[string]bool{}
		for _, c := range h.tools.recorded() {
			if c.ID == "" || seen[c.ID] {
				t.Fatalf("call id %q missing or reused", c.ID)
			}
			seen[c.ID] = true
		}
		if len(seen) != 4 {
			t.Fatalf("%d distinct ids", len(seen))
		}
		reqs := h.srv.Requests()
		for _, req := range reqs[1:] {
			a := lastAssistant(t, req)
			tm := toolMessages(req)
			tm = tm[len(tm)-len(a.ToolCalls):]
			for i, c := range a.ToolCalls {
				if c.ID == "" || tm[i].ToolCallID != c.ID {
					t.Fatalf("assistant call %q answered by %q", c.ID, tm[i].ToolCallID)
				}
			}
		}
		if a := lastAssistant(t, reqs[1]); a.ToolCalls[1].ID != "dup" {
			t.Fatalf("the first 'dup' should keep its id: %+v", a.ToolCalls)
		}
	})
}

func TestObjectAndInvalidArguments(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		h := newHarness(t, Config{}, stream, nil,
			agenttest.CallTools(
				agenttest.Call{ID: "obj", Name: "run_python", ArgumentsObject: json.RawMessage(`{"code": "print(1)"}`)},
				agenttest.Call{ID: "bad", Name: "run_python", Arguments: `{"code": "print(`},
				agenttest.Call{ID: "dbl", Name: "run_python", Arguments: `"{\"code\":\"print(2)\"}"`},
				agenttest.Call{ID: "arr", Name: "run_python", Arguments: `[1,2]`},
				agenttest.Call{ID: "empty", Name: "execute_shell", Arguments: ``},
			),
			agenttest.Say("ok"),
		)
		v, _ := h.run("args")
		h.noServerErrors()
		if v.Status != wire.RunDone {
			t.Fatalf("view = %+v", v)
		}
		got := map[string]string{}
		for _, c := range h.tools.recorded() {
			got[c.ID] = string(c.Arguments)
		}
		want := map[string]string{"obj": `{"code":"print(1)"}`, "dbl": `{"code":"print(2)"}`, "empty": `{}`}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("tools ran with %v, want %v", got, want)
		}
		tm := toolMessages(h.srv.Requests()[1])
		if len(tm) != 5 {
			t.Fatalf("%d tool messages", len(tm))
		}
		for _, i := range []int{1, 3} {
			if !strings.Contains(tm[i].Content, "invalid_json") || !strings.Contains(tm[i].Content, "not run") {
				t.Fatalf("tool message %d = %q", i, tm[i].Content)
			}
		}
		// The assistant message echoed back carries string arguments.
		if a := lastAssistant(t, h.srv.Requests()[1]); a.ToolCalls[0].Function.Arguments != `{"code":"print(1)"}` {
			t.Fatalf("echoed arguments = %q", a.ToolCalls[0].Function.Arguments)
		}
	})
}

func TestStreamedCallsSharingOneIndex(t *testing.T) {
	chunk := func(delta string) string {
		return `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`
	}
	cases := map[string][]string{
		// Two calls, both index 0, distinct ids, arguments in fragments.
		"new id": {
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"run_python","arguments":"{\"code\":"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"print(1)\"}"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"execute_shell","arguments":"{\"command\":\"ls\"}"}}]}`),
		},
		// Ollama style: whole calls, index 0, no ids, object arguments.
		"no ids": {
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"function":{"name":"run_python","arguments":{"code":"print(1)"}}}]}`),
			chunk(`{"tool_calls":[{"index":0,"function":{"name":"execute_shell","arguments":{"command":"ls"}}}]}`),
		},
		// Both calls in one delta, no index at all.
		"no index": {
			chunk(`{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"run_python","arguments":"{\"code\":\"print(1)\"}"}},{"id":"b","function":{"name":"execute_shell","arguments":"{\"command\":\"ls\"}"}}]}`),
		},
	}
	for name, chunks := range cases {
		t.Run(name, func(t *testing.T) {
			chunks := append(chunks, `{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
			h := newHarness(t, Config{}, true, nil,
				func(agenttest.Request) agenttest.Reply { return agenttest.Reply{Chunks: chunks} },
				agenttest.Say("ok"))
			v, _ := h.run("split")
			h.noServerErrors()
			calls := h.tools.recorded()
			if v.Status != wire.RunDone || len(calls) != 2 {
				t.Fatalf("view = %+v, calls = %+v", v, calls)
			}
			byName := map[string]string{}
			for _, c := range calls {
				byName[c.Name] = string(c.Arguments)
			}
			if byName["run_python"] != `{"code":"print(1)"}` || byName["execute_shell"] != `{"command":"ls"}` {
				t.Fatalf("calls = %v", byName)
			}
			a := lastAssistant(t, h.srv.Requests()[1])
			if len(a.ToolCalls) != 2 || a.ToolCalls[0].Function.Name != "run_python" || a.ToolCalls[0].ID == a.ToolCalls[1].ID {
				t.Fatalf("echoed calls = %+v", a.ToolCalls)
			}
		})
	}
}

func TestUnknownToolAndToolFailuresDoNotAbort(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		statuses := map[string]dispatcher.Status{
			"t": dispatcher.StatusTimeout, "o": dispatcher.StatusOOM, "b": dispatcher.StatusBusy,
			"l": dispatcher.StatusSessionLost, "i": dispatcher.StatusInternal,
		}
		tools := &fakeTools{run: func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
			if st, ok := statuses[c.ID]; ok {
				return dispatcher.Result{Status: st, Content: "failed: " + string(st), Err: errors.New("platform " + string(st))}
			}
			if c.ID == "p" {
				panic("tool bug")
			}
			return defaultResult(c)
		}}
		h := newHarness(t, Config{}, stream, tools,
			agenttest.CallTools(
				agenttest.Call{ID: "u", Name: "delete_everything", Arguments: `{}`},
				py("t", "1"), py("o", "2"), py("b", "3"), py("l", "4"), py("i", "5"), py("p", "6"),
			),
			agenttest.Say("coped"),
		)
		v, _ := h.run("failures")
		h.noServerErrors()
		if v.Status != wire.RunDone || v.FinalAnswer != "coped" {
			t.Fatalf("view = %+v", v)
		}
		tm := toolMessages(h.srv.Requests()[1])
		want := []string{"[status: rejected, reason: unknown_tool]", "[status: timeout]", "[status: oom]",
			"[status: busy]", "[status: session_lost]", "[status: internal]", "[status: internal]"}
		if len(tm) != len(want) {
			t.Fatalf("%d tool messages", len(tm))
		}
		for i, w := range want {
			if !strings.HasPrefix(tm[i].Content, w) {
				t.Fatalf("tool message %d = %q, want prefix %q", i, tm[i].Content, w)
			}
		}
		if !strings.Contains(tm[6].Content, "panic") {
			t.Fatalf("panic message = %q", tm[6].Content)
		}
	})
}

func TestRepeatedCallDetection(t *testing.T) {
	same := []string{`{"code":"print(1)"}`, `{ "code" : "print(1)" }`, `{"code":"print(1)"}`, `{"code": "print(1)"}`}
	turn := func(i int) agenttest.Turn {
		return agenttest.CallTools(agenttest.Call{ID: fmt.Sprintf("r%d", i), Name: "run_python", Arguments: same[i]})
	}
	t.Run("stops when it continues", func(t *testing.T) {
		h := newHarness(t, Config{}, false, nil, turn(0), turn(1), turn(2), turn(3))
		v, _ := h.run("loop")
		h.noServerErrors()
		if v.Status != wire.RunLoop || !strings.Contains(v.Error, "repeated") {
			t.Fatalf("view = %+v", v)
		}
		if n := len(h.tools.recorded()); n != 2 {
			t.Fatalf("tool ran %d times, want 2 (the third is refused)", n)
		}
		reqs := h.srv.Requests()
		if len(reqs) != 4 {
			t.Fatalf("%d requests", len(reqs))
		}
		tm := toolMessages(reqs[3])
		if w := tm[len(tm)-1].Content; !strings.Contains(w, "repeated_call") || !strings.Contains(w, "3 times") {
			t.Fatalf("warning = %q", w)
		}
	})
	t.Run("heeds the warning", func(t *testing.T) {
		h := newHarness(t, Config{}, false, nil, turn(0), turn(1), turn(2), agenttest.Say("fine"))
		v, _ := h.run("loop")
		if v.Status != wire.RunDone || v.FinalAnswer != "fine" {
			t.Fatalf("view = %+v", v)
		}
	})
}

func TestRetriesOn500And429ThenSuccess(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		h := newHarness(t, Config{}, stream, nil, agenttest.Fail(500), agenttest.Fail(429), agenttest.Fail(502), agenttest.Say("made it"))
		v, evs := h.run("flaky")
		h.noServerErrors()
		if v.Status != wire.RunDone || v.FinalAnswer != "made it" || len(h.srv.Requests()) != 4 {
			t.Fatalf("view = %+v after %d requests", v, len(h.srv.Requests()))
		}
		if errs := ofType(evs, wire.EventError); len(errs) != 3 || errs[0]["retrying"] != true {
			t.Fatalf("retry events = %v", errs)
		}
	})
}

func TestRetriesGiveUpAfterBound(t *testing.T) {
	h := newHarnessWith(t, ManagerConfig{}, false, nil, Provider{Retries: 2},
		agenttest.Fail(503), agenttest.Fail(503), agenttest.Fail(503), agenttest.Say("too late"))
	v, _ := h.run("down")
	if v.Status != wire.RunFailed || !strings.Contains(v.Error, "3 attempts") || !strings.Contains(v.Error, "503") {
		t.Fatalf("view = %+v", v)
	}
	if n := len(h.srv.Requests()); n != 3 {
		t.Fatalf("%d requests, want 3", n)
	}
}

func TestNoRetryOnClientError(t *testing.T) {
	h := newHarness(t, Config{}, false, nil, agenttest.Fail(400), agenttest.Say("unreached"))
	v, _ := h.run("bad")
	if v.Status != wire.RunFailed || len(h.srv.Requests()) != 1 {
		t.Fatalf("view = %+v after %d requests", v, len(h.srv.Requests()))
	}
}

func TestRetriesConnectionErrors(t *testing.T) {
	// A body the client cannot decode stands in for a dropped connection.
	h := newHarness(t, Config{}, false, nil,
		func(agenttest.Request) agenttest.Reply { return agenttest.Reply{Raw: `{"choices": [`} },
		agenttest.Say("ok"))
	v, _ := h.run("x")
	if v.Status != wire.RunDone || len(h.srv.Requests()) != 2 {
		t.Fatalf("view = %+v after %d requests", v, len(h.srv.Requests()))
	}
}

func TestCancelStopsRunningToolCall(t *testing.T) {
	started := make(chan struct{})
	sawDone := make(chan struct{})
	tools := &fakeTools{run: func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
		close(started)
		<-ctx.Done()
		close(sawDone)
		return dispatcher.Result{Status: dispatcher.StatusInternal, Content: "cancelled"}
	}}
	h := newHarness(t, Config{}, false, tools, agenttest.CallTools(py("c", "sleep")), agenttest.Say("unreached"))
	v, err := h.m.Start(RunRequest{Goal: "cancel me", Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := h.m.Cancel("alice", v.ID); err != nil {
		t.Fatal(err)
	}
	<-sawDone
	end, _ := h.wait(v.ID)
	if end.Status != wire.RunCancelled || len(h.srv.Requests()) != 1 {
		t.Fatalf("view = %+v", end)
	}
}

func TestCancelStopsModelCall(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		arrived := make(chan struct{})
		gone := make(chan struct{})
		h := newHarness(t, Config{}, stream, nil, func(req agenttest.Request) agenttest.Reply {
			close(arrived)
			<-req.Ctx.Done()
			close(gone)
			return agenttest.Reply{Status: 500}
		})
		v, err := h.m.Start(RunRequest{Goal: "slow model", Owner: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		<-arrived
		if err := h.m.Cancel("alice", v.ID); err != nil {
			t.Fatal(err)
		}
		end, _ := h.wait(v.ID)
		<-gone
		if end.Status != wire.RunCancelled {
			t.Fatalf("view = %+v", end)
		}
	})
}

func TestTokenBudget(t *testing.T) {
	h := newHarness(t, Config{TokenBudget: 100}, false, nil,
		func(agenttest.Request) agenttest.Reply {
			return agenttest.Reply{Calls: []agenttest.Call{py("a", "1")}, Usage: &agenttest.Usage{PromptTokens: 90, CompletionTokens: 20, TotalTokens: 110}}
		})
	v, _ := h.run("expensive")
	if v.Status != wire.RunBudget || len(h.tools.recorded()) != 0 {
		t.Fatalf("view = %+v, runs = %d", v, len(h.tools.recorded()))
	}
}

func TestWallClockBudget(t *testing.T) {
	tools := &fakeTools{run: func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
		<-ctx.Done() // only the wall-clock budget can end this
		return dispatcher.Result{Status: dispatcher.StatusTimeout, Content: "stopped"}
	}}
	h := newHarness(t, Config{WallBudget: 20 * time.Millisecond}, false, tools, agenttest.CallTools(py("a", "1")))
	v, _ := h.run("slow tool")
	if v.Status != wire.RunBudget || !strings.Contains(v.Error, "wall-clock") {
		t.Fatalf("view = %+v", v)
	}
}

func TestContextShorteningKeepsSystemAndLatestTurn(t *testing.T) {
	big := func(tag string) string { return tag + strings.Repeat("x", 4000) + tag }
	tools := &fakeTools{run: func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
		return dispatcher.Result{Status: dispatcher.StatusOK, Content: big(c.ID)}
	}}
	h := newHarness(t, Config{ContextBudget: 1500}, false, tools,
		agenttest.CallTools(py("first", "1")),
		agenttest.CallTools(py("second", "2")),
		agenttest.Say("ok"))
	v, _ := h.run("big outputs")
	if v.Status != wire.RunDone {
		t.Fatalf("view = %+v", v)
	}
	reqs := h.srv.Requests()
	if tm := toolMessages(reqs[1]); tm[0].Content != big("first") {
		t.Fatal("the latest turn was shortened")
	}
	tm := toolMessages(reqs[2])
	if !strings.Contains(tm[0].Content, "omitted to fit the context budget") || !strings.HasPrefix(tm[0].Content, "first") ||
		!strings.HasSuffix(tm[0].Content, "first") || len(tm[0].Content) > 600 {
		t.Fatalf("old result not shortened: %d bytes", len(tm[0].Content))
	}
	if tm[1].Content != big("second") {
		t.Fatal("the latest tool result was shortened")
	}
	if reqs[2].Messages[0].Content != reqs[0].Messages[0].Content {
		t.Fatal("the system prompt changed")
	}
}

func TestShortenContextNeverTouchesProtected(t *testing.T) {
	long := strings.Repeat("y", 10000)
	msgs := []message{
		{Role: "system", Content: long},
		{Role: "user", Content: "goal"},
		{Role: "assistant", ToolCalls: []toolCall{{ID: "1", Name: "run_python", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "1", Content: long},
		{Role: "assistant", ToolCalls: []toolCall{{ID: "2", Name: "run_python", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "2", Content: long},
	}
	n := shortenContext(msgs, 0, 10, 100)
	if n != 1 || len(msgs[3].Content) > 200 || msgs[0].Content != long || msgs[5].Content != long {
		t.Fatalf("shortened %d; sizes %d %d %d", n, len(msgs[0].Content), len(msgs[3].Content), len(msgs[5].Content))
	}
}

func TestEstimatedUsageWhenServerReportsNone(t *testing.T) {
	h := newHarness(t, Config{}, false, nil, agenttest.Say("short answer"))
	v, _ := h.run("x")
	if !v.Usage.Estimated || v.Usage.TotalTokens <= 0 {
		t.Fatalf("usage = %+v", v.Usage)
	}
}

func TestMessagesRequestAndMount(t *testing.T) {
	h := newHarness(t, Config{}, false, nil, agenttest.CallTools(py("a", "1")), agenttest.Say("ok"))
	msgs := `[{"role":"user","content":"earlier question"},{"role":"assistant","content":"earlier answer"}]`
	v, err := h.m.Start(RunRequest{Messages: json.RawMessage(msgs), Goal: "now this", Owner: "alice", Mount: "/data/in", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	end, _ := h.wait(v.ID)
	if end.Status != wire.RunDone {
		t.Fatalf("view = %+v", end)
	}
	req := h.srv.Requests()[0]
	if len(req.Messages) != 4 || req.Messages[1].Content != "earlier question" || req.Messages[3].Content != "now this" {
		t.Fatalf("messages = %+v", req.Messages)
	}
	c := h.tools.recorded()[0]
	if c.Mount != "/data/in" || c.SessionID != "s1" || c.Owner != "alice" || c.Caller != "agent" {
		t.Fatalf("call = %+v", c)
	}
}

func TestTooManyCallsInOneTurn(t *testing.T) {
	h := newHarness(t, Config{MaxCallsPerTurn: 2}, false, nil,
		agenttest.CallTools(py("a", "1"), py("b", "2"), py("c", "3")), agenttest.Say("ok"))
	v, _ := h.run("many")
	tm := toolMessages(h.srv.Requests()[1])
	if v.Status != wire.RunDone || len(h.tools.recorded()) != 2 || len(tm) != 3 || !strings.Contains(tm[2].Content, "too_many_calls") {
		t.Fatalf("view = %+v, runs = %d, messages = %+v", v, len(h.tools.recorded()), tm)
	}
}

func TestRequestMaxStepsOnlyLowers(t *testing.T) {
	h := newHarness(t, Config{MaxSteps: 1}, false, nil,
		agenttest.CallTools(py("a", "1")), agenttest.Say("forced"))
	v, err := h.m.Start(RunRequest{Goal: "x", Owner: "alice", MaxSteps: 50})
	if err != nil {
		t.Fatal(err)
	}
	end, _ := h.wait(v.ID)
	if end.Status != wire.RunMaxSteps || end.Steps != 2 {
		t.Fatalf("view = %+v", end)
	}
}

// TestScriptedModelReadsToolOutput is the pattern for end-to-end tests: the
// script's answer is computed from what the tool returned.
func TestScriptedModelReadsToolOutput(t *testing.T) {
	tools := &fakeTools{run: func(ctx context.Context, c dispatcher.Call) dispatcher.Result {
		return dispatcher.Result{Status: dispatcher.StatusOK, Content: "137"}
	}}
	h := newHarness(t, Config{}, true, tools,
		agenttest.CallTools(agenttest.Call{ID: "c", Name: "execute_shell", Arguments: `{"command":"wc -l *.py"}`}),
		func(req agenttest.Request) agenttest.Reply {
			return agenttest.Reply{Content: "There are " + req.LastTool() + " lines."}
		})
	if v, _ := h.run("count"); v.FinalAnswer != "There are 137 lines." {
		t.Fatalf("view = %+v", v)
	}
}

func TestRetryThenClientErrorCountsAttempts(t *testing.T) {
	h := newHarness(t, Config{}, false, nil, agenttest.Fail(500), agenttest.Fail(400))
	v, _ := h.run("x")
	if v.Status != wire.RunFailed || !strings.Contains(v.Error, "2 attempts") {
		t.Fatalf("view = %+v", v)
	}
}
