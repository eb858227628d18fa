package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/state"
)

// randomDispatcher answers every call as print(random.random()) would: a
// different number each run.
func randomDispatcher() *fakeDispatcher {
	var n atomic.Int64
	return &fakeDispatcher{run: func(_ context.Context, call dispatcher.Call) dispatcher.Result {
		out := fmt.Sprintf("0.%d\n", 1000+n.Add(1))
		return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusOK, Content: out,
			Sandbox: &core.Result{Status: core.StatusOK, Stdout: out}}
	}}
}

// TestImplicitReplayOnlyInFlight is the replay rule of api/README.md for a
// call id without an Idempotency-Key (issue 26: a script with a fixed id
// ran again got its first run's result for 24 hours). The same id and
// body sent again after the first answered runs again, with a new result
// and no Idempotent-Replayed; sent while the first still runs, it waits
// for the first's answer and gets it with Idempotent-Replayed: true, the
// call having run once.
func TestImplicitReplayOnlyInFlight(t *testing.T) {
	h := newHarness(t, func(_ *Config, d *Deps) { d.Dispatcher = randomDispatcher() })
	body := py("import random; print(random.random())")
	first := h.do(keyAlice, "POST", "/v1/tool-calls", body).must(t, http.StatusOK)
	again := h.do(keyAlice, "POST", "/v1/tool-calls", body).must(t, http.StatusOK)
	if string(first.Body) == string(again.Body) || again.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the same id run again was replayed (%q):\n%s\n%s", again.Header.Get("Idempotent-Replayed"), first.Body, again.Body)
	}

	g := newGatedDispatcher()
	r := newRealAPI(t, func(_ *Config, d *Deps) { d.Dispatcher = g })
	var wg sync.WaitGroup
	answers := make([]plainAnswer, 2)
	wg.Go(func() { answers[0] = postPlain(t, r, "call_1", "x") })
	<-g.started
	wg.Go(func() { answers[1] = postPlain(t, r, "call_1", "x") })
	time.Sleep(300 * time.Millisecond) // the duplicate is waiting (a late one would find the answer and run again: fails below)
	g.open()
	wg.Wait()
	if n := g.count(); n != 1 {
		t.Fatalf("a duplicate in flight ran the call: %d dispatches", n)
	}
	if answers[0].replayed != "" || answers[1].replayed != "true" || answers[0].body != answers[1].body || answers[1].code != 200 {
		t.Fatalf("in flight: first %+v, duplicate %+v", answers[0], answers[1])
	}
	go func() { <-g.started; g.open() }() // let the next call through
	if third := postPlain(t, r, "call_1", "x"); third.replayed != "" || g.count() != 2 {
		t.Fatalf("after the answer: %+v, %d dispatches", third, g.count())
	}
}

// TestExplicitKeyReplayNeverOutlivesArtifacts: an Idempotency-Key's
// answer is replayed (Idempotent-Replayed: true), and its artifact URLs
// answer; once the artifacts are gone the key runs the call again
// instead of replaying links that answer 404, both when they expired (the
// answer lives no longer than they do) and when one went missing earlier.
func TestExplicitKeyReplayNeverOutlivesArtifacts(t *testing.T) {
	var st *state.Memory
	h := newHarness(t, func(c *Config, d *Deps) {
		st = state.NewMemory(c.Now) // the harness's clock
		d.State, c.ArtifactTTL = st, time.Hour
	})
	first := h.do(keyAlice, "POST", "/v1/tool-calls", py("plot"), "Idempotency-Key", "k-plot").must(t, http.StatusOK)
	again := h.do(keyAlice, "POST", "/v1/tool-calls", py("plot"), "Idempotency-Key", "k-plot").must(t, http.StatusOK)
	if again.Header.Get("Idempotent-Replayed") != "true" || string(again.Body) != string(first.Body) || len(h.disp.calls) != 1 {
		t.Fatalf("replay: %q, %d dispatches", again.Header.Get("Idempotent-Replayed"), len(h.disp.calls))
	}
	art := again.JSON(t)["result"].(map[string]any)["artifacts"].([]any)[0].(map[string]any)
	h.do(keyAlice, "GET", art["url"].(string), nil).must(t, http.StatusOK)

	// One artifact goes missing before its time: the answer is not replayed.
	if err := st.Delete(context.Background(), state.Key{Kind: "artifact", Owner: "alice", ID: art["id"].(string)}, 0); err != nil {
		t.Fatal(err)
	}
	rerun := h.do(keyAlice, "POST", "/v1/tool-calls", py("plot"), "Idempotency-Key", "k-plot").must(t, http.StatusOK)
	if rerun.Header.Get("Idempotent-Replayed") != "" || len(h.disp.calls) != 2 {
		t.Fatalf("replayed an answer whose artifact is gone: %q, %d dispatches", rerun.Header.Get("Idempotent-Replayed"), len(h.disp.calls))
	}
	url := rerun.JSON(t)["result"].(map[string]any)["artifacts"].([]any)[0].(map[string]any)["url"].(string)
	h.do(keyAlice, "GET", url, nil).must(t, http.StatusOK)

	// The answer expires with its artifacts (an hour here), not in 24 hours.
	h.clock.Advance(time.Hour + time.Second)
	late := h.do(keyAlice, "POST", "/v1/tool-calls", py("plot"), "Idempotency-Key", "k-plot").must(t, http.StatusOK)
	if late.Header.Get("Idempotent-Replayed") != "" || len(h.disp.calls) != 3 {
		t.Fatalf("replayed after the artifacts expired: %q, %d dispatches", late.Header.Get("Idempotent-Replayed"), len(h.disp.calls))
	}
	if keep := idempotency.Keep; keep != 24*time.Hour {
		t.Fatalf("an answer without artifacts is kept %v, want 24h", keep)
	}
}

// plainAnswer is one non-streamed answer.
type plainAnswer struct {
	code     int
	replayed string
	body     string
	err      error
}

// postPlain sends a non-streamed run_python call with id to r and reads
// the whole answer.
func postPlain(t *testing.T, r *realAPI, id, code string) plainAnswer {
	b := fmt.Sprintf(`{"id":%q,"type":"function","function":{"name":"run_python","arguments":{"code":%q}}}`, id, code)
	req, _ := http.NewRequest("POST", r.url+"/v1/tool-calls", strings.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return plainAnswer{err: err}
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return plainAnswer{code: res.StatusCode, replayed: res.Header.Get("Idempotent-Replayed"), body: string(out), err: err}
}
