package api

import (
	"testing"

	"github.com/airlock-dev/airlock/dispatcher"
)

// TestSessionFetchFollowsItsEnvironment: fetch_url in a session opened in
// an environment reaches the dispatcher with that environment, whose egress
// list then narrows the key's policy (dispatcher.fetchEnvironment), even
// when the call names another; a session call of another tool is passed on
// as sent.
func TestSessionFetchFollowsItsEnvironment(t *testing.T) {
	h, _ := envHarness(t)
	sid := h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"environment": "geo"}).must(t, 201).JSON(t)["id"].(string)
	for _, env := range []string{"", "python"} {
		body := map[string]any{"type": "function", "function": map[string]any{"name": "fetch_url", "arguments": map[string]any{"url": "http://data.test/"}}}
		if env != "" {
			body["environment"] = env
		}
		h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/tool-calls", body)
		h.disp.mu.Lock()
		last := h.disp.calls[len(h.disp.calls)-1]
		h.disp.mu.Unlock()
		if last.Name != dispatcher.ToolFetchURL || last.Environment != "geo" || last.SessionID != sid {
			t.Fatalf("fetch_url in a geo session (named %q): the dispatcher got environment %q, session %q", env, last.Environment, last.SessionID)
		}
	}
}
