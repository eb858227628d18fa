package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/agent/agenttest"
	"github.com/airlock-dev/airlock/wire"
)

func TestResolveProvider(t *testing.T) {
	env := map[string]string{EnvBaseURL: "http://env:8000/v1", EnvAPIKey: "env-key-123456", EnvModel: "env-model"}
	getenv := func(k string) string { return env[k] }
	p := ResolveProvider(Provider{}, getenv)
	if p.BaseURL != "http://env:8000/v1" || p.APIKey != "env-key-123456" || p.Model != "env-model" || !p.Configured() {
		t.Fatalf("from env: %v", p)
	}
	p = ResolveProvider(Provider{BaseURL: "http://flag/v1", APIKey: "flag-key-123456", Model: "flag-model"}, getenv)
	if p.BaseURL != "http://flag/v1" || p.APIKey != "flag-key-123456" || p.Model != "flag-model" {
		t.Fatalf("flags must win: %v", p)
	}
	p = ResolveProvider(Provider{APIKey: "k-123456", Model: "m"}, func(string) string { return "" })
	if p.BaseURL != DefaultOpenAIBaseURL {
		t.Fatalf("key without URL: %v", p)
	}
	if ResolveProvider(Provider{}, func(string) string { return "" }).Configured() {
		t.Fatal("empty provider configured")
	}
}

func TestProviderNeverPrintsKey(t *testing.T) {
	p := Provider{BaseURL: "http://x/v1", APIKey: testKey, Model: "m"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("p", "provider", p)
	for _, s := range []string{p.String(), fmt.Sprint(p), fmt.Sprintf("%v %+v", p, p), buf.String()} {
		if strings.Contains(s, testKey) {
			t.Fatalf("key printed: %s", s)
		}
	}
}

// TestModelKeyIsNoRedactionTarget: the model key is sent to the model
// server as a bearer token and is never compared with anything the run
// shows, so no guess can be confirmed by a [REDACTED] (issue 26: 10,000
// guesses recovered a weak key). A tool call and a tool output holding the
// key's value show it as they are, in the events and in what goes back to
// the model, exactly as a wrong guess would; the server's own error text,
// which may quote the key it refused, reaches the operator's log only,
// never an event or the run's error.
func TestModelKeyIsNoRedactionTarget(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		wrong := "sk-test-SECRET-0123456788"
		h := newHarness(t, Config{}, stream, nil,
			func(agenttest.Request) agenttest.Reply {
				return agenttest.Reply{Status: 500, ErrorBody: `{"error":{"message":"bad key ` + testKey + `","type":"server_error"}}`}
			},
			agenttest.CallTools(py("a", "print('"+testKey+"')"), py("b", "print('"+wrong+"')")),
			agenttest.Say("done"),
		)
		v, evs := h.run("guess the key")
		if v.Status != wire.RunDone {
			t.Fatalf("view = %+v", v)
		}
		reqs := h.srv.Requests()
		if got := reqs[0].Authorization; got != "Bearer "+testKey {
			t.Fatalf("authorization = %q", got)
		}
		all, _ := json.Marshal(evs)
		if strings.Contains(string(all), "[REDACTED") || strings.Contains(string(reqs[len(reqs)-1].Body), "[REDACTED") {
			t.Fatalf("something was redacted, an oracle for the guess: %s", all)
		}
		var results []string
		for _, ev := range evs {
			if ev.Type == wire.EventToolResult {
				results = append(results, string(ev.Data))
			}
		}
		if joined := strings.Join(results, "\n"); len(results) != 2 || !strings.Contains(joined, testKey) || !strings.Contains(joined, wrong) {
			t.Fatalf("tool results must show both guesses as they are: %q", results)
		}
		calls := h.tools.recorded()
		if len(calls) != 2 || !strings.Contains(string(calls[0].Arguments)+string(calls[1].Arguments), testKey) {
			t.Fatalf("tool calls = %+v", calls)
		}
		last := string(reqs[len(reqs)-1].Body)
		if strings.Count(last, testKey) != strings.Count(last, wrong) {
			t.Fatalf("the right and the wrong guess come back to the model differently: %s", last)
		}
		// The server's echo of the key in its error: events say what
		// failed (status, type), the log has the server's words.
		var retry string
		for _, ev := range evs {
			if ev.Type == wire.EventError {
				retry = string(ev.Data)
			}
		}
		if !strings.Contains(retry, "500") || !strings.Contains(retry, "server_error") || strings.Contains(retry, "bad key") {
			t.Fatalf("retry event = %s", retry)
		}
		if !strings.Contains(h.logs.String(), "bad key") {
			t.Fatalf("the server's message is not in the operator's log: %s", h.logs.String())
		}
	})
}

// TestEnvironmentKeyNotUsedBehindTheCallersBack: openai-go reads
// OPENAI_API_KEY by itself; a provider resolved without a key must not
// send one.
func TestEnvironmentKeyNotUsedBehindTheCallersBack(t *testing.T) {
	t.Setenv(EnvAPIKey, "sk-env-LEAK-999999")
	h := newHarness(t, Config{}, false, nil, agenttest.Say("ok"))
	h.m.loop.model = newModel(Provider{BaseURL: h.srv.URL, Model: "m", HTTPClient: h.m.provider.HTTPClient}, h.m.logger)
	if v, _ := h.run("x"); v.Status != wire.RunDone {
		t.Fatalf("view = %+v", v)
	}
	if got := h.srv.Requests()[0].Authorization; got != "" {
		t.Fatalf("authorization = %q", got)
	}
}
