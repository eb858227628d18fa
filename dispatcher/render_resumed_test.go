package dispatcher

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// TestRenderResumed: a resumed call tells the model so, naming what did
// not come back; a plain call says nothing of it.
func TestRenderResumed(t *testing.T) {
	res := core.Result{Status: core.StatusOK, Stdout: "42\n", Resumed: true, WakeMS: 812,
		ResumeSkipped: []core.SnapshotSkip{{Name: "fh", Type: "TextIOWrapper", Reason: "open file"}}}
	got := renderSandbox(res)
	if !strings.Contains(got, "restored from its last snapshot before this call (812 ms)") || !strings.Contains(got, "fh (TextIOWrapper)") {
		t.Fatalf("resumed call rendered as:\n%s", got)
	}
	res.Resumed, res.ResumeSkipped = false, nil
	if got := renderSandbox(res); strings.Contains(got, "snapshot") {
		t.Fatalf("plain call rendered as:\n%s", got)
	}
}
