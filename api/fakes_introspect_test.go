package api

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// fakeNames are the names the fake kernel completes.
var fakeNames = []string{"abs", "all", "area", "arena"}

// IntrospectSession answers as airlock_introspect.py would: completions of
// the identifier before the cursor among fakeNames, the signature of
// area, and two variables.
func (f *fakeSessions) IntrospectSession(ctx context.Context, owner, id, code string, q core.Introspect) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.check(owner, id); err != nil {
		return nil, err
	}
	before := []rune(code)[:q.CursorPos]
	start := len(before)
	for start > 0 && (before[start-1] == '_' || ('a' <= before[start-1] && before[start-1] <= 'z')) {
		start--
	}
	var out any
	switch q.Kind {
	case core.IntrospectComplete:
		if strings.Contains(code, "jedi-breaks") {
			out = map[string]any{"status": "error", "ename": "ValueError", "evalue": "no", "traceback": []string{}}
			break
		}
		matches := []string{}
		for _, n := range fakeNames {
			if strings.HasPrefix(n, string(before[start:])) {
				matches = append(matches, n)
			}
		}
		out = map[string]any{"status": "ok", "matches": matches, "cursor_start": start, "cursor_end": q.CursorPos, "metadata": map[string]any{}}
	case core.IntrospectInspect:
		found := strings.Contains(string(before), "area(")
		out = map[string]any{"status": "ok", "found": found, "metadata": map[string]any{},
			"data": map[string]string{"text/plain": "Signature: area(radius)\nType:      function\nDocstring:\nThe area of a circle.\nIn square units."}}
	case core.IntrospectVariables:
		out = map[string]any{"status": "ok", "more": 0, "variables": []map[string]any{
			{"name": "df", "type": "DataFrame", "module": "pandas", "shape": []int{5, 1}, "size": 172, "summary": ""},
			{"name": "x", "type": "int", "module": "", "shape": nil, "size": 28, "summary": "1"},
		}}
	default:
		return nil, core.Errorf("fake.introspect", core.ErrInvalid, fmt.Sprintf("kind %q", q.Kind))
	}
	b, err := json.Marshal(out)
	return b, err
}

// InputSession answers no input() (no call waits in the fake).
func (f *fakeSessions) InputSession(ctx context.Context, owner, id, value string) (bool, error) {
	return false, nil
}
