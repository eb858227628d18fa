package client_test

import (
	"net/http"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

func TestNotebookRoundTrip(t *testing.T) {
	ctx := testCtx(t)
	url := serve(t, nil)
	alice, bob := newClient(t, url, keyAlice), newClient(t, url, keyBob)
	s, err := alice.CreateSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alice.DeleteSession(ctx, s.ID) })

	_, err = alice.GetNotebook(ctx, s.ID)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)

	cells := []map[string]any{{"language": "python", "source": "x = 1"}}
	saved, err := alice.PutNotebook(ctx, s.ID, cells, 0)
	if err != nil || saved.Version != 1 || saved.UpdatedAt.IsZero() {
		t.Fatalf("PutNotebook: %+v %v", saved, err)
	}
	nb, err := alice.GetNotebook(ctx, s.ID)
	if err != nil || nb.Version != 1 || len(nb.Cells) != 1 || !nb.UpdatedAt.Equal(saved.UpdatedAt) {
		t.Fatalf("GetNotebook: %+v %v", nb, err)
	}
	_, err = alice.PutNotebook(ctx, s.ID, cells, 0)
	if ae := apiError(t, err, http.StatusConflict, core.ErrConflict); ae.Details["current_version"] != float64(1) {
		t.Fatalf("conflict details %v", ae.Details)
	}
	_, err = bob.GetNotebook(ctx, s.ID)
	apiError(t, err, http.StatusNotFound, core.ErrNotFound)
	_, err = alice.PutNotebook(ctx, s.ID, map[string]any{"not": "a list"}, 1)
	apiError(t, err, http.StatusBadRequest, core.ErrInvalid)
}
