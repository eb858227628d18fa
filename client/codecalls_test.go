package client

import (
	"encoding/json"
	"testing"
)

// TestCodeCalls: PythonCall and ShellCall carry env, stdin and
// timeout_seconds as tool arguments, and leave out what is not set.
func TestCodeCalls(t *testing.T) {
	c := PythonCall("print(1)", CodeOptions{Env: map[string]string{"A": "1"}, Stdin: "in", TimeoutSeconds: 5})
	b, _ := json.Marshal(c.Arguments)
	if c.Name != "run_python" || string(b) != `{"code":"print(1)","env":{"A":"1"},"stdin":"in","timeout_seconds":5}` {
		t.Errorf("python call: %s %s", c.Name, b)
	}
	c = ShellCall("cat", CodeOptions{})
	b, _ = json.Marshal(c.Arguments)
	if c.Name != "execute_shell" || string(b) != `{"command":"cat"}` {
		t.Errorf("shell call: %s %s", c.Name, b)
	}
}
