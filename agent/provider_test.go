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

// TestAPIKeyNeverLeaks: the key reaches the model server (as a bearer
// token) and nowhere else, even when the model or the server echo it.
func TestAPIKeyNeverLeaks(t *testing.T) {
	bothModes(t, func(t *testing.T, stream bool) {
		h := newHarness(t, Config{}, stream, nil,
			func(agenttest.Request) agenttest.Reply {
				return agenttest.Reply{Status: 500, ErrorBody: `{"error":{"message":"bad key ` + testKey + `"}}`}
			},
			agenttest.CallTools(py("a", "print('"+testKey+"')")),
			agenttest.Say("the key is "+testKey),
		)
		v, evs := h.run("leak it")
		if v.Status != wire.RunDone {
			t.Fatalf("view = %+v", v)
		}
		if got := h.srv.Requests()[0].Authorization; got != "Bearer "+testKey {
			t.Fatalf("authorization = %q", got)
		}
		view, _ := json.Marshal(v)
		all, _ := json.Marshal(evs)
		calls, _ := json.Marshal(h.tools.recorded())
		for what, s := range map[string]string{"events": string(all), "logs": h.logs.String(), "tool calls": string(calls), "view": string(view)} {
			if strings.Contains(s, testKey) {
				t.Fatalf("API key in %s: %s", what, s)
			}
		}
		if !strings.Contains(string(all), redactedMark) || h.logs.String() == "" {
			t.Fatal("expected redacted echoes and some logs")
		}
		if len(h.tools.recorded()) != 1 || !strings.Contains(string(h.tools.recorded()[0].Arguments), redactedMark) {
			t.Fatalf("tool call = %+v", h.tools.recorded())
		}
	})
}

// TestEnvironmentKeyNotUsedBehindTheCallersBack: openai-go reads
// OPENAI_API_KEY by itself; a provider resolved without a key must not
// send one.
func TestEnvironmentKeyNotUsedBehindTheCallersBack(t *testing.T) {
	t.Setenv(EnvAPIKey, "sk-env-LEAK-999999")
	h := newHarness(t, Config{}, false, nil, agenttest.Say("ok"))
	h.m.loop.model = newModel(Provider{BaseURL: h.srv.URL, Model: "m", HTTPClient: h.m.provider.HTTPClient}, h.m.logger, h.m.loop.redact.String)
	if v, _ := h.run("x"); v.Status != wire.RunDone {
		t.Fatalf("view = %+v", v)
	}
	if got := h.srv.Requests()[0].Authorization; got != "" {
		t.Fatalf("authorization = %q", got)
	}
}
