package api

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/state"
)

// TestNotebookSaveLoadAndConflict saves, reloads and re-saves a notebook
// through the real routes and checks the version rules.
func TestNotebookSaveLoadAndConflict(t *testing.T) {
	h := newHarness(t, nil)
	id := h.openSession(keyAlice)
	path := "/v1/sessions/" + id + "/notebook"

	res := h.do(keyAlice, "GET", path, nil).must(t, http.StatusNotFound)
	if res.errCode(t) != core.ErrNotFound {
		t.Fatalf("code %s", res.errCode(t))
	}

	cells := []any{
		map[string]any{"language": "python", "source": "import pandas as pd", "outputs": []any{}},
		map[string]any{"language": "shell", "source": "ls", "outputs": []any{map[string]any{"text": "sales.csv\n"}}},
	}
	saved := h.do(keyAlice, "PUT", path, map[string]any{"cells": cells, "version": 0}).must(t, http.StatusOK).JSON(t)
	if saved["version"].(float64) != 1 {
		t.Fatalf("first save: %v", saved)
	}
	if ts, err := time.Parse(time.RFC3339, saved["updated_at"].(string)); err != nil || !ts.Equal(t0) {
		t.Fatalf("updated_at %v (%v), want %v", saved["updated_at"], err, t0)
	}

	got := h.do(keyAlice, "GET", path, nil).must(t, http.StatusOK).JSON(t)
	gc := got["cells"].([]any)
	if got["version"].(float64) != 1 || len(gc) != 2 || gc[1].(map[string]any)["source"] != "ls" {
		t.Fatalf("reload: %v", got)
	}

	h.clock.Advance(time.Minute)
	saved = h.do(keyAlice, "PUT", path, map[string]any{"cells": cells[:1], "version": 1}).must(t, http.StatusOK).JSON(t)
	if saved["version"].(float64) != 2 {
		t.Fatalf("second save: %v", saved)
	}

	// A second tab still on version 1, and a first save over an existing one.
	for _, v := range []int{1, 0, 7} {
		res = h.do(keyAlice, "PUT", path, map[string]any{"cells": cells, "version": v}).must(t, http.StatusConflict)
		e := res.JSON(t)["error"].(map[string]any)
		if e["code"] != string(core.ErrConflict) || !strings.Contains(e["message"].(string), "saved version is 2") ||
			e["details"].(map[string]any)["current_version"].(float64) != 2 {
			t.Fatalf("version %d: %s", v, res.Body)
		}
	}
	got = h.do(keyAlice, "GET", path, nil).must(t, http.StatusOK).JSON(t)
	if got["version"].(float64) != 2 || len(got["cells"].([]any)) != 1 {
		t.Fatalf("a refused save changed the notebook: %v", got)
	}
	if ts, _ := time.Parse(time.RFC3339, got["updated_at"].(string)); !ts.Equal(t0.Add(time.Minute)) {
		t.Fatalf("updated_at %v", got["updated_at"])
	}
}

// TestNotebookOwnerScoped: another key's session, an unknown session and
// a closed one are all 404, for GET and PUT.
func TestNotebookOwnerScoped(t *testing.T) {
	h := newHarness(t, nil)
	id := h.openSession(keyAlice)
	path := "/v1/sessions/" + id + "/notebook"
	h.do(keyAlice, "PUT", path, map[string]any{"cells": []any{}, "version": 0}).must(t, http.StatusOK)

	h.do(keyBob, "GET", path, nil).must(t, http.StatusNotFound)
	h.do(keyBob, "PUT", path, map[string]any{"cells": []any{}, "version": 1}).must(t, http.StatusNotFound)
	h.do(keyAlice, "GET", "/v1/sessions/nope/notebook", nil).must(t, http.StatusNotFound)
	h.do("", "GET", path, nil).must(t, http.StatusUnauthorized)

	// Bob's own session with the same store has its own notebook.
	bid := h.openSession(keyBob)
	h.do(keyBob, "GET", "/v1/sessions/"+bid+"/notebook", nil).must(t, http.StatusNotFound)

	h.do(keyAlice, "DELETE", "/v1/sessions/"+id, nil).must(t, http.StatusNoContent)
	h.do(keyAlice, "GET", path, nil).must(t, http.StatusNotFound)
}

// TestNotebookBadBodies: cells not an array, a negative version, bad JSON
// and a body over 4 MiB.
func TestNotebookBadBodies(t *testing.T) {
	h := newHarness(t, nil)
	id := h.openSession(keyAlice)
	path := "/v1/sessions/" + id + "/notebook"
	for name, body := range map[string]any{
		"cells object":  `{"cells":{"a":1},"version":0}`,
		"cells string":  `{"cells":"x","version":0}`,
		"cells null":    `{"cells":null,"version":0}`,
		"cells missing": `{"version":0}`,
	} {
		res := h.do(keyAlice, "PUT", path, body).must(t, http.StatusBadRequest)
		e := res.JSON(t)["error"].(map[string]any)
		if !strings.Contains(e["message"].(string), "cells") || e["details"].(map[string]any)["field"] != "cells" {
			t.Fatalf("%s: %s", name, res.Body)
		}
	}
	res := h.do(keyAlice, "PUT", path, `{"cells":[],"version":-1}`).must(t, http.StatusBadRequest)
	if !strings.Contains(string(res.Body), "version") {
		t.Fatalf("negative version: %s", res.Body)
	}
	h.do(keyAlice, "PUT", path, `{"cells":[`).must(t, http.StatusBadRequest)
	h.do(keyAlice, "PUT", path, `{"cells":[],"version":0,"extra":1}`).must(t, http.StatusBadRequest)

	big := `{"version":0,"cells":["` + strings.Repeat("x", 4<<20) + `"]}`
	if res := h.do(keyAlice, "PUT", path, big).must(t, http.StatusRequestEntityTooLarge); res.errCode(t) != core.ErrTooLarge {
		t.Fatalf("code %s", res.errCode(t))
	}
	h.do(keyAlice, "GET", path, nil).must(t, http.StatusNotFound)

	// Just under the cap is accepted.
	fits := `{"version":0,"cells":["` + strings.Repeat("x", 4<<20-100) + `"]}`
	h.do(keyAlice, "PUT", path, fits).must(t, http.StatusOK)
}

// TestNotebookUsesInjectedStore: the notebook lands in Deps.State, kind
// "notebook", owner-scoped, with a TTL.
func TestNotebookUsesInjectedStore(t *testing.T) {
	clock := &fakeClock{now: t0}
	st := state.NewMemory(clock.Now)
	h := newHarness(t, func(_ *Config, d *Deps) { d.State = st })
	id := h.openSession(keyAlice)
	h.do(keyAlice, "PUT", "/v1/sessions/"+id+"/notebook", map[string]any{"cells": []any{"a"}, "version": 0}).must(t, http.StatusOK)

	it, err := st.Get(t.Context(), state.Key{Kind: "notebook", Owner: "alice", ID: id})
	if err != nil {
		t.Fatal(err)
	}
	if it.Version != 1 || it.Expires.IsZero() || !strings.Contains(string(it.Value), `"a"`) {
		t.Fatalf("stored %+v %s", it, it.Value)
	}
	if d := it.Expires.Sub(t0); d < 7*24*time.Hour {
		t.Fatalf("TTL %v", d)
	}
}
