package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// artifactDispatcher answers every call with n artifacts of size bytes,
// named after the caller.
func artifactDispatcher(n, size int) *fakeDispatcher {
	return &fakeDispatcher{run: func(_ context.Context, call dispatcher.Call) dispatcher.Result {
		arts := make([]core.Artifact, n)
		for i := range arts {
			data := bytes.Repeat([]byte{byte(i)}, size)
			copy(data, fmt.Sprint(call.ID, i))
			arts[i] = core.Artifact{Name: fmt.Sprintf("out/%s-%d.png", call.Owner, i), MIME: "text/html", Size: 1, SHA256: "x", Data: data}
		}
		return dispatcher.Result{CallID: call.ID, Name: call.Name, Status: dispatcher.StatusOK,
			Sandbox: &core.Result{Status: core.StatusOK, Artifacts: arts}}
	}}
}

// toolCall posts a run_python call as key and decodes the answer.
func (r *realAPI) toolCall(key string) wire.ToolCallResponse {
	r.t.Helper()
	body := `{"type":"function","function":{"name":"run_python","arguments":"{\"code\":\"1\"}"}}`
	code, out := r.do(key, "POST", "/v1/tool-calls", strings.NewReader(body), int64(len(body)))
	var res wire.ToolCallResponse
	if code != 200 || json.Unmarshal(out, &res) != nil {
		r.t.Fatalf("tool call: %d %.300s", code, out)
	}
	return res
}

// TestOtherKeyNeverEvictsArtifacts is the eviction attack of issue 10: bob
// writes 7 MiB of outputs per call, many times over the store's size;
// alice's artifact stays readable, bob's calls keep working.
func TestOtherKeyNeverEvictsArtifacts(t *testing.T) {
	disp := artifactDispatcher(7, 1<<20)
	r := newRealAPI(t, func(c *Config, d *Deps) {
		d.Dispatcher = disp
		c.ArtifactMaxBytes, c.ArtifactOwnerMaxBytes = 48<<20, 32<<20
	})
	a := r.toolCall(keyAlice)
	if len(a.Result.Artifacts) != 7 || a.Result.Artifacts[0].URL == "" {
		t.Fatalf("alice's artifacts: %+v", a.Result.Artifacts)
	}
	url := a.Result.Artifacts[0].URL
	for i := range 20 {
		b := r.toolCall(keyBob)
		if len(b.Result.Artifacts) != 7 {
			t.Fatalf("bob call %d: %+v", i, b.Result)
		}
		if code, _ := r.do(keyAlice, "GET", url, nil, 0); code != 200 {
			t.Fatalf("after bob's call %d (%d MiB written), alice's artifact answers %d", i, (i+1)*7, code)
		}
	}
	bobBytes, _, _ := r.srv.artifacts.Usage(context.Background(), "bob")
	if bobBytes > 32<<20 {
		t.Errorf("bob holds %d bytes over his 32 MiB quota", bobBytes)
	}
	// bob's newest artifact is there, and a is still alice's alone
	if code, _ := r.do(keyBob, "GET", url, nil, 0); code != 404 {
		t.Errorf("bob reads alice's artifact: %d", code)
	}
	// MIME comes from the name, not the result
	if m := a.Result.Artifacts[0].MIME; m != "image/png" {
		t.Errorf("MIME %q", m)
	}
}

// TestManyTinyArtifactsCappedAndCheap is the 35 s CPU attack: one call
// returning 30,000 tiny artifacts is capped to the per-call limit, with a
// warning, fast.
func TestManyTinyArtifactsCappedAndCheap(t *testing.T) {
	disp := artifactDispatcher(30000, 8)
	r := newRealAPI(t, func(c *Config, d *Deps) { d.Dispatcher = disp })
	start := time.Now()
	res := r.toolCall(keyBob)
	el := time.Since(start)
	t.Logf("a call returning 30,000 artifacts answered in %v", el)
	if len(res.Result.Artifacts) != 32 {
		t.Errorf("kept %d artifacts, limit 32", len(res.Result.Artifacts))
	}
	if !strings.Contains(strings.Join(res.Result.Warnings, "\n"), "30000 artifacts returned, over the limit of 32") {
		t.Errorf("no warning: %q", res.Result.Warnings)
	}
	if el > 2*time.Second {
		t.Errorf("took %v", el)
	}
	if code, _ := r.do(keyBob, "GET", res.Result.Artifacts[0].URL, nil, 0); code != http.StatusOK {
		t.Errorf("kept artifact: %d", code)
	}
}
