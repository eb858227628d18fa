package api

import (
	"net/http"
	"testing"
)

// TestCompleteAndVariables: completion offers the kernel's matches for the
// name before the cursor, a cursor inside area( gets area's signature and
// docstring, a Jedi error is no matches, a cursor past the end is a 400,
// another key's session a 404; the variables route lists the globals.
func TestCompleteAndVariables(t *testing.T) {
	h := newHarness(t, nil)
	id := h.do(keyAlice, "POST", "/v1/sessions", nil).must(t, http.StatusCreated).JSON(t)["id"].(string)
	path := "/v1/sessions/" + id

	got := h.do(keyAlice, "POST", path+"/complete", map[string]any{"code": "x = 1\nare", "cursor_pos": 9}).must(t, http.StatusOK).JSON(t)
	if m := got["matches"].([]any); len(m) != 2 || m[0] != "area" || m[1] != "arena" {
		t.Errorf("matches %v, want [area arena]", m)
	}
	if got["cursor_start"].(float64) != 6 || got["cursor_end"].(float64) != 9 || len(got["signatures"].([]any)) != 0 {
		t.Errorf("completion %v: want 6..9 and no signatures outside a call", got)
	}

	code := "s = 'é('\nr = area("
	got = h.do(keyAlice, "POST", path+"/complete", map[string]any{"code": code, "cursor_pos": len([]rune(code))}).must(t, http.StatusOK).JSON(t)
	sigs := got["signatures"].([]any)
	if len(sigs) != 1 {
		t.Fatalf("signatures %v, want area's", got)
	}
	sig := sigs[0].(map[string]any)
	if sig["label"] != "area(radius)" || sig["doc"] != "The area of a circle.\nIn square units." {
		t.Errorf("signature %v", sig)
	}
	// A closed call and a parenthesis in a string or comment are not a call.
	for _, c := range []string{"area(2) + ar", "s = '(' ; ar", "# (\nar"} {
		got = h.do(keyAlice, "POST", path+"/complete", map[string]any{"code": c, "cursor_pos": len([]rune(c))}).must(t, http.StatusOK).JSON(t)
		if len(got["signatures"].([]any)) != 0 {
			t.Errorf("%q: signatures %v outside a call", c, got["signatures"])
		}
	}

	got = h.do(keyAlice, "POST", path+"/complete", map[string]any{"code": "jedi-breaks", "cursor_pos": 3}).must(t, http.StatusOK).JSON(t)
	if len(got["matches"].([]any)) != 0 {
		t.Errorf("a kernel error gave matches %v", got)
	}
	h.do(keyAlice, "POST", path+"/complete", map[string]any{"code": "ab", "cursor_pos": 3}).must(t, http.StatusBadRequest)
	h.do(keyBob, "POST", path+"/complete", map[string]any{"code": "ab", "cursor_pos": 2}).must(t, http.StatusNotFound)

	vars := h.do(keyAlice, "GET", path+"/variables", nil).must(t, http.StatusOK).JSON(t)["variables"].([]any)
	if len(vars) != 2 {
		t.Fatalf("variables %v", vars)
	}
	df := vars[0].(map[string]any)
	if df["name"] != "df" || df["type"] != "DataFrame" || len(df["shape"].([]any)) != 2 || df["shape"].([]any)[0].(float64) != 5 {
		t.Errorf("df %v", df)
	}
	if _, ok := vars[1].(map[string]any)["shape"]; ok {
		t.Errorf("x has a shape: %v", vars[1])
	}
	h.do(keyBob, "GET", path+"/variables", nil).must(t, http.StatusNotFound)
}
