package toolcalls

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/wire"
)

// TestAnswerCarriesTheWholeResult: every part of a sandbox result reaches
// the answer (a conversion once dropped the exception, the displays, the
// dropped byte counts and the execution count).
func TestAnswerCarriesTheWholeResult(t *testing.T) {
	sb := &core.Result{Status: core.StatusError, ExitCode: 1, Stdout: "a", Stderr: "b", Truncated: true, Message: "m",
		Warnings: []string{"w"}, SessionEnded: true, Error: &core.ExecError{Name: "E", Value: "v", Traceback: []string{"t"}},
		ExecutionCount: 7, Display: []core.Display{{Data: map[string]string{"text/plain": "42"}}},
		Dropped: core.Dropped{Stdout: 5, Stderr: 6}, KernelRestarted: true,
		Artifacts: []core.Artifact{{Name: "f.png", MIME: "image/png", Size: 3, SHA256: "ab", Data: []byte("png")}}}
	res := dispatcher.Result{CallID: "c", Name: "run_python", Status: dispatcher.StatusError, Content: "msg", Reason: "r",
		Fields: map[string]string{"/x": "y"}, DurationMS: 9, Sandbox: sb}
	got := Answer(res, "s1")
	exit := 1
	want := wire.ToolCallResponse{Message: wire.ToolMessage{Role: "tool", ToolCallID: "c", Content: "msg"},
		Result: wire.ToolResult{ToolCallID: "c", Name: "run_python", Status: core.StatusError, Reason: "r",
			Fields: map[string]string{"/x": "y"}, DurationMS: 9, ExitCode: &exit, Stdout: "a", Stderr: "b", Truncated: true,
			Message: "m", Warnings: []string{"w"}, SessionID: "s1", SessionEnded: true, Error: sb.Error, ExecutionCount: 7,
			Display: sb.Display, Dropped: &sb.Dropped, KernelRestarted: true,
			Artifacts: []wire.Artifact{{Name: "f.png", MIME: "image/png", Size: 3, SHA256: "ab"}}}}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("answer\n got %s\nwant %s", g, w)
	}
}

// TestFailure maps each platform outcome to its code, and leaves the
// outcomes of the code and the refusals for the model alone.
func TestFailure(t *testing.T) {
	for st, code := range map[dispatcher.Status]core.Code{
		dispatcher.StatusBusy: core.ErrBusy, dispatcher.StatusSessionNotFound: core.ErrNotFound,
		dispatcher.StatusSessionLost: core.ErrSessionLost, dispatcher.StatusUnavailable: core.ErrUnavailable,
		dispatcher.StatusInternal: core.ErrInternal, dispatcher.StatusOK: "", dispatcher.StatusError: "",
		dispatcher.StatusRejected: "", dispatcher.StatusPendingApproval: "",
	} {
		if got := core.CodeOf(Failure(dispatcher.Result{Status: st})); got != code {
			t.Errorf("%s: %q, want %q", st, got, code)
		}
	}
	over := Failure(dispatcher.Result{Status: dispatcher.StatusRejected, Code: core.ErrInvalid, Content: "timeout_seconds 300 is over 30"})
	if !errors.Is(over, core.ErrInvalid) || over.Error() != "timeout_seconds 300 is over 30" {
		t.Fatalf("over the ceiling: %v", over)
	}
}

// TestGrants: a request's limits only lower the ceiling unless the key's
// policy grants more (capped at the maximum); negative limits and unknown
// input folders are refused, naming what is wrong.
func TestGrants(t *testing.T) {
	ks, err := keys.New("alice:alice-key-0123456789abcdef", "bob:bob-key-0123456789abcdef00")
	if err != nil {
		t.Fatal(err)
	}
	g := Grants{Keys: ks, DefaultLimits: core.Limits{Timeout: 10 * time.Second, Memory: 256 << 20},
		MaxLimits: core.Limits{Timeout: time.Minute, Memory: 1 << 30}, InputFolders: map[string]string{"sales": t.TempDir()}}
	if _, err := g.Limits("bob", &wire.Limits{TimeoutSeconds: 5}); err != nil {
		t.Fatalf("lower: %v", err)
	}
	_, err = g.Limits("bob", &wire.Limits{TimeoutSeconds: 11, MemoryBytes: 1 << 30})
	if !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "timeout_seconds 11 is over 10") || !strings.Contains(err.Error(), "memory_bytes") {
		t.Fatalf("over the ceiling: %v", err)
	}
	if _, err := g.Limits("bob", &wire.Limits{CPUs: -1}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("negative: %v", err)
	}
	if l, err := g.Limits("bob", &wire.Limits{TimeoutSeconds: 9.3e9}); err == nil {
		t.Fatalf("9.3e9 s accepted as %v", l.Timeout)
	}
	g.InsecureLocal = true
	if c := g.Ceiling("local"); c != g.MaxLimits {
		t.Fatalf("the loopback operator's ceiling %+v", c)
	}
	if p, err := g.Input("sales"); err != nil || p == "" {
		t.Fatalf("input: %q %v", p, err)
	}
	_, err = g.Input("hr")
	var d interface{ ErrorDetails() map[string]any }
	if !errors.Is(err, core.ErrInvalid) || !errors.As(err, &d) || !reflect.DeepEqual(d.ErrorDetails()["allowed"], []string{"sales"}) {
		t.Fatalf("unknown input: %v", err)
	}
}
