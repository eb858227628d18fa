package batch

import (
	"encoding/json"
	"strings"
)

// codeArgs are the argument names that hold an item's program, in the
// order they are looked for (run_python, execute_shell, sqlite_query).
var codeArgs = []string{"code", "command", "sql", "query"}

// itemCode is what an item runs, for its result line: the code or command
// of its tool call (arguments as an object or as OpenAI's JSON string),
// the arguments themselves when they hold neither, or a run's goal.
func itemCode(it Item) string {
	switch {
	case it.Run != nil:
		return it.Run.Goal
	case it.Call == nil || len(it.Call.Arguments) == 0:
		return ""
	}
	raw := it.Call.Arguments
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	var args map[string]any
	if json.Unmarshal(raw, &args) != nil {
		return string(raw)
	}
	for _, k := range codeArgs {
		if v, ok := args[k].(string); ok {
			return v
		}
	}
	return strings.TrimSpace(string(raw))
}

// lineError is a failed line's error in one line, for the report: the
// platform's error, else the exception Python named last on stderr, else
// the line's message; "" for a line that did not fail.
func lineError(l reportLine) string {
	if !l.Failed() {
		return ""
	}
	if l.Error != nil && l.Error.Message != "" {
		if l.Error.Code != "" {
			return l.Error.Code + ": " + l.Error.Message
		}
		return l.Error.Message
	}
	lines := strings.Split(strings.TrimSpace(l.Stderr), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		return last
	}
	if l.Message != "" {
		return l.Message
	}
	return l.Status
}
