package agent

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

func TestArgumentsText(t *testing.T) {
	cases := []struct {
		raw, want string
		bad       bool
	}{
		{`"{\"a\": 1}"`, `{"a":1}`, false},
		{`{"a": 1}`, `{"a":1}`, false},
		{`"\"{\\\"a\\\":1}\""`, `{"a":1}`, false}, // double-encoded
		{``, `{}`, false},
		{`null`, `{}`, false},
		{`""`, `{}`, false},
		{`"{\"a\": "`, `{"a": `, true},
		{`"[1]"`, `[1]`, true},
		{`"42"`, `42`, true},
	}
	for _, c := range cases {
		got, err := argumentsText([]byte(c.raw))
		if got != c.want || (err != nil) != c.bad {
			t.Errorf("argumentsText(%s) = %q, %v", c.raw, got, err)
		}
	}
}

func TestCanonicalJSON(t *testing.T) {
	if canonicalJSON(`{"b": 1, "a": {"y": 2.50, "x": [1, 2]}}`) != canonicalJSON(`{"a":{"x":[1,2],"y":2.50},"b":1}`) {
		t.Fatal("key order or spacing changed the canonical form")
	}
	if canonicalJSON(`{"a":1}`) == canonicalJSON(`{"a":2}`) {
		t.Fatal("different values compare equal")
	}
}

func TestIDAssigner(t *testing.T) {
	a := newIDAssigner()
	a.observe("call_airlock_1")
	calls := []toolCall{{ID: ""}, {ID: "x"}, {ID: "x"}, {ID: ""}}
	if n := a.assign(calls); n != 3 {
		t.Fatalf("changed %d", n)
	}
	seen := map[string]bool{"call_airlock_1": true}
	for _, c := range calls {
		if c.ID == "" || seen[c.ID] {
			t.Fatalf("ids %+v", calls)
		}
		seen[c.ID] = true
	}
	if calls[1].ID != "x" {
		t.Fatal("first x should be kept")
	}
}

func TestRetryableAndBackoff(t *testing.T) {
	ctx := context.Background()
	for status, want := range map[int]bool{400: false, 401: false, 404: false, 408: true, 429: true, 500: true, 503: true} {
		if got := retryable(ctx, &openai.Error{StatusCode: status}); got != want {
			t.Errorf("retryable(%d) = %v", status, got)
		}
	}
	if !retryable(ctx, errors.New("connection reset")) {
		t.Error("connection errors are retryable")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if retryable(done, errors.New("connection reset")) {
		t.Error("nothing is retried once the caller is done")
	}
	base, max := 100*time.Millisecond, time.Second
	for attempt := 0; attempt < 10; attempt++ {
		d := backoff(attempt, base, max, nil)
		top := min(base<<attempt, max)
		if d < top/2 || d > top {
			t.Errorf("backoff(%d) = %v, want in [%v, %v]", attempt, d, top/2, top)
		}
	}
	h := http.Header{}
	h.Set("Retry-After", "5")
	if d := backoff(0, base, 10*time.Second, &openai.Error{StatusCode: 429, Response: &http.Response{Header: h}}); d != 5*time.Second {
		t.Errorf("Retry-After ignored: %v", d)
	}
}

func TestAccumulatorKeepsOpenAIForm(t *testing.T) {
	a := newAccumulator()
	for _, c := range []string{
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":""}},{"index":1,"id":"b","function":{"name":"g","arguments":"{}"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
	} {
		if err := a.add([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	r := a.reply()
	if len(r.ToolCalls) != 2 || r.ToolCalls[0].Arguments != `{"x":1}` || r.ToolCalls[1].Name != "g" || r.Usage.TotalTokens != 7 {
		t.Fatalf("reply = %+v", r)
	}
}
