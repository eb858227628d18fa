package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestCompleteRequiresCodeAndCursor: code and cursor_pos are both required
// (as api/openapi.json's CompleteRequest says): a body without one of them
// is a 400 naming it, not completions of an empty prefix at offset 0; an
// empty code string is still a question.
func TestCompleteRequiresCodeAndCursor(t *testing.T) {
	h := newHarness(t, nil)
	id := h.do(keyAlice, "POST", "/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)["id"].(string)
	path := "/v1/sessions/" + id + "/complete"
	for _, c := range []struct {
		body map[string]any
		name string
	}{
		{map[string]any{}, "code"},
		{map[string]any{"cursor_pos": 0}, "code"},
		{map[string]any{"code": nil, "cursor_pos": 0}, "code"},
		{map[string]any{"code": "ar"}, "cursor_pos"},
		{map[string]any{"code": "ar", "cursor_pos": nil}, "cursor_pos"},
	} {
		r := h.do(keyAlice, "POST", path, c.body).must(t, http.StatusBadRequest)
		if msg := string(r.Body); !strings.Contains(msg, c.name) {
			t.Errorf("%v: the 400 does not name %s: %s", c.body, c.name, msg)
		}
	}
	h.do(keyAlice, "POST", path, map[string]any{"code": "", "cursor_pos": 0}).must(t, http.StatusOK)
}
