package api

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/snapshots"
)

// conformSnapshots drives every snapshot route once (for the conformance
// test) and returns the snapshot's id.
func conformSnapshots(t *testing.T, h *harness, sid string) string {
	t.Helper()
	snap := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/snapshot", nil).must(t, 201).JSON(t)["snapshot_id"].(string)
	h.do(keyAlice, "GET", "/v1/snapshots", nil).must(t, 200)
	h.do(keyAlice, "GET", "/v1/snapshots/"+snap, nil).must(t, 200)
	h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"snapshot": snap, "restore": "namespace"}).must(t, 201)
	h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/fork", nil).must(t, 201)
	h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/notebook.ipynb", nil).must(t, 200)
	return snap
}

// TestSessionSnapshots: a snapshot reports what it skipped by name; the
// owner lists, reads, restores (namespace and replay, call by call),
// forks, exports and deletes; another owner gets 404 on every route; a
// snapshot over the owner's quota is 429 quota; a bad restore mode 400.
func TestSessionSnapshots(t *testing.T) {
	h := newHarness(t, nil)
	sid := h.openSession(keyAlice)
	h.do(keyAlice, "PUT", "/v1/sessions/"+sid+"/files/data.csv", []byte("a,b\n1,2\n")).must(t, 200)
	log := snapshots.NewCallLog(h.srv.deps.State)
	ctx := context.Background()
	for _, code := range []string{"x = 1", "x"} {
		res := core.Result{Status: core.StatusOK, ExecutionCount: 1, Display: []core.Display{{Data: map[string]string{"text/plain": "1", "text/html": "<table></table>"}, Result: true}}}
		if err := log.Append(ctx, "alice", sid, snapshots.CallOf(core.Request{Code: code}, res, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
	created := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/snapshot", nil).must(t, 201).JSON(t)
	snap := created["snapshot_id"].(string)
	if sk := created["skipped"].([]any); len(sk) != 1 || sk[0].(map[string]any)["name"] != "f" || created["bytes"].(float64) != 8 {
		t.Fatalf("snapshot answer: %v", created)
	}
	// Another owner: 404 everywhere.
	for _, r := range []struct{ method, path string }{
		{"POST", "/v1/sessions/" + sid + "/snapshot"}, {"POST", "/v1/sessions/" + sid + "/fork"},
		{"GET", "/v1/sessions/" + sid + "/notebook.ipynb"}, {"GET", "/v1/snapshots/" + snap}, {"DELETE", "/v1/snapshots/" + snap},
	} {
		if got := h.do(keyBob, r.method, r.path, nil); got.Code != 404 {
			t.Fatalf("bob %s %s: %d %s", r.method, r.path, got.Code, got.Body)
		}
	}
	if got := h.do(keyBob, "POST", "/v1/sessions", map[string]any{"snapshot": snap}); got.Code != 404 {
		t.Fatalf("bob restores alice's snapshot: %d %s", got.Code, got.Body)
	}
	if l := h.do(keyBob, "GET", "/v1/snapshots", nil).must(t, 200).JSON(t)["snapshots"].([]any); len(l) != 0 {
		t.Fatalf("bob lists %v", l)
	}
	if l := h.do(keyAlice, "GET", "/v1/snapshots", nil).must(t, 200).JSON(t)["snapshots"].([]any); len(l) != 1 || l[0].(map[string]any)["calls"].(float64) != 2 {
		t.Fatalf("alice lists %v", l)
	}
	h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"snapshot": snap, "restore": "bogus"}).must(t, 400)
	h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"restore": "replay"}).must(t, 400)
	rs := h.do(keyAlice, "POST", "/v1/sessions", map[string]any{"snapshot": snap, "restore": "replay"}).must(t, 201).JSON(t)
	restored := rs["restored"].(map[string]any)
	if restored["restore"] != "replay" || len(restored["replay"].([]any)) != 2 || rs["id"] == sid {
		t.Fatalf("replay restore: %v", rs)
	}
	fork := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/fork", nil).must(t, 201).JSON(t)
	if fork["id"] == sid || fork["restored"].(map[string]any)["skipped"].([]any)[0].(map[string]any)["name"] != "f" {
		t.Fatalf("fork: %v", fork)
	}
	if l := h.do(keyAlice, "GET", "/v1/snapshots", nil).JSON(t)["snapshots"].([]any); len(l) != 1 {
		t.Fatalf("the fork's snapshot is listed or kept: %v", l)
	}
	nb := h.do(keyAlice, "GET", "/v1/sessions/"+sid+"/notebook.ipynb", nil).must(t, 200)
	var doc struct {
		NBFormat int `json:"nbformat"`
		Cells    []struct {
			Source  []string         `json:"source"`
			Outputs []map[string]any `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(nb.Body, &doc); err != nil || doc.NBFormat != 4 || len(doc.Cells) != 2 || doc.Cells[1].Outputs[0]["output_type"] != "execute_result" {
		t.Fatalf("notebook (%v): %s", err, nb.Body)
	}
	h.sess.snapQuota = 4
	if r := h.do(keyAlice, "POST", "/v1/sessions/"+sid+"/snapshot", nil); r.Code != 429 || r.errCode(t) != core.ErrQuota {
		t.Fatalf("over the quota: %d %s", r.Code, r.Body)
	}
	h.do(keyAlice, "DELETE", "/v1/snapshots/"+snap, nil).must(t, 204)
	h.do(keyAlice, "GET", "/v1/snapshots/"+snap, nil).must(t, 404)
}
