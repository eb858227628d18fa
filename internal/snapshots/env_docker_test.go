package snapshots

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/sandbox"
)

// TestSnapshotRecordsItsEnvironment: a snapshot of a session opened in an
// environment other than python (a custom one: the python image relabelled
// as environment snapenv, built here with one LABEL line) records that
// environment, so a restore opens the new session there and not in the
// python image; a session opened with none records python.
func TestSnapshotRecordsItsEnvironment(t *testing.T) {
	k, _, _ := dockerKeeper(t, DefaultConfig())
	ctx := context.Background()
	base := sandbox.DefaultConfig().Images[core.Python]
	if img := os.Getenv("AIRLOCK_PYTHON_IMAGE"); img != "" {
		base = img
	}
	image := sandbox.EnvImagePrefix + "snapenv:t" + strconv.FormatInt(time.Now().UnixNano(), 36)
	build := exec.Command("docker", "build", "-q", "-t", image, "-")
	build.Stdin = strings.NewReader("FROM " + base + "\nLABEL " + sandbox.LabelEnvironment + "=snapenv\n")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v %s", err, out)
	}
	t.Cleanup(func() { // before the engine's own clean-up: its containers of the image go first
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "ancestor="+image).Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
		_ = exec.Command("docker", "rmi", image).Run()
	})
	for _, c := range []struct{ env, image, want string }{{"snapenv", image, "snapenv"}, {"", "", "python"}} {
		res, err := k.Handle(ctx, core.Request{Op: core.OpSessionOpen, Owner: "alice", Environment: c.env, Image: c.image, Limits: sessionLimits})
		if err != nil || res.SessionID == "" {
			t.Fatalf("open in %q: %v %+v", c.env, err, res)
		}
		call(t, k, "alice", res.SessionID, "x = 41")
		snap := "snap-env-" + c.want
		if _, err := k.Handle(ctx, core.Request{Op: core.OpSessionSnapshot, Owner: "alice", SessionID: res.SessionID, SnapshotID: snap}); err != nil {
			t.Fatalf("snapshot of the %q session: %v", c.env, err)
		}
		m, err := k.store.Get(ctx, "alice", snap)
		if err != nil || m.Environment != c.want {
			t.Fatalf("snapshot of a session opened in %q records environment %q (%v), want %q", c.env, m.Environment, err, c.want)
		}
	}
}
