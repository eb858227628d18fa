package api

import (
	"strings"
	"testing"
)

// TestSessionCallNamingAnotherEnvironmentIsRefused: a call in a session
// that names an environment other than the session's is 400 naming both
// (it ran silently in the session's environment, so an import the named
// environment has failed); naming the session's own, or none, runs.
func TestSessionCallNamingAnotherEnvironmentIsRefused(t *testing.T) {
	h, _ := envHarness(t)
	plain := h.openSession(keyAlice)
	geo := h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"environment": "geo"}).must(t, 201).JSON(t)["id"].(string)
	call := func(sid, env string) response {
		body := map[string]any{"type": "function", "function": map[string]any{"name": "run_python", "arguments": map[string]any{"code": "print(1)"}}}
		if env != "" {
			body["environment"] = env
		}
		return h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/tool-calls", body)
	}
	for _, c := range []struct{ sid, env, other string }{{plain, "geo", "python"}, {geo, "python", "geo"}, {plain, "nosuch", "python"}} {
		res := call(c.sid, c.env)
		if res.Code != 400 || !strings.Contains(string(res.Body), `\"`+c.env+`\"`) || !strings.Contains(string(res.Body), `\"`+c.other+`\"`) {
			t.Fatalf("a %s session call naming %s: %d %s", c.other, c.env, res.Code, res.Body)
		}
	}
	for _, c := range []struct{ sid, env string }{{plain, ""}, {plain, "python"}, {geo, "geo"}, {geo, ""}} {
		if res := call(c.sid, c.env); res.Code != 200 {
			t.Fatalf("session call naming %q: %d %s", c.env, res.Code, res.Body)
		}
	}
}
