package snapshots

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/enginetest"
	"github.com/airlock-dev/airlock/internal/testscale"
	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/state"
)

// dockerKeeper is a Keeper over a real sandbox engine (enginetest.Docker;
// the snapshot tests keep the engine's default pool) and a Bolt state
// store.
func dockerKeeper(t *testing.T, cfg Config) (*Keeper, *sandbox.Engine, state.Store) {
	t.Helper()
	e := enginetest.Docker(t, "snap", func(sc *sandbox.Config) { sc.PoolSize = sandbox.DefaultConfig().PoolSize })
	st, err := state.OpenBolt(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return NewKeeper(e, New(st, cfg, nil), NewCallLog(st), nil), e, st
}

// sessionLimits give a session room for a large DataFrame and its snapshot
// (the snapshot's files live in the container's /tmp).
var sessionLimits = core.Limits{Memory: 1536 << 20, TmpfsBytes: 768 << 20, Timeout: 2 * time.Minute}

func open(t *testing.T, k *Keeper, owner string) string {
	t.Helper()
	res, err := k.Handle(context.Background(), core.Request{Op: core.OpSessionOpen, Owner: owner, Limits: sessionLimits})
	if err != nil || res.SessionID == "" {
		t.Fatalf("open: %v %+v", err, res)
	}
	return res.SessionID
}

func call(t *testing.T, k *Keeper, owner, id, code string) core.Result {
	t.Helper()
	res, err := k.Handle(context.Background(), core.Request{Owner: owner, SessionID: id, Language: core.Python, Code: code,
		Limits: core.Limits{Timeout: min(testscale.D(2*time.Minute), sandbox.DefaultConfig().Max.Timeout)}}) // scaled, within the server maximum
	if err != nil {
		t.Fatalf("call %q: %v", code, err)
	}
	if res.Status != core.StatusOK {
		t.Fatalf("call %q: %s %s %s %+v", code, res.Status, res.Stdout, res.Stderr, res.Error)
	}
	return res
}

// rows is the test DataFrame's length: 1,000,000 (AIRLOCK_SNAPSHOT_ROWS
// lowers it on a slow machine).
func rows() int {
	if n, err := strconv.Atoi(os.Getenv("AIRLOCK_SNAPSHOT_ROWS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

const setup = `
import numpy as np, pandas as pd
from sklearn.linear_model import LinearRegression
N = %d
df = pd.DataFrame({"a": np.arange(N), "b": np.arange(N) * 2.0, "c": ["x%%d" %% (i %% 100) for i in range(N)]})
model = LinearRegression().fit(df[["a"]].head(1000), df["b"].head(1000))
sq = lambda v: v * v
class Point:
    def __init__(self, x):
        self.x = x
    def twice(self):
        return self.x * 2
p = Point(21)
f = open("/work/data.txt", "w")
f.write("kept on disk")
f.flush()
gen = (i for i in range(10))
x = 1
`

const check = `
import json
print(json.dumps({"shape": list(df.shape), "sum": float(df["b"].sum()), "c": df["c"].iloc[12345 %% N],
  "pred": round(float(model.predict(pd.DataFrame({"a": [10]}))[0]), 6), "sq": sq(7), "twice": p.twice(),
  "isinst": isinstance(p, Point), "file": open("/work/data.txt").read(), "x": x, "np": np.__name__}))
`

// TestSnapshotSurvivesItsContainer: a session holding a large DataFrame, a
// fitted model, a lambda, a class of its own, an open file and a
// generator is snapshotted; its container is removed (kill -9 of what ran
// it); a fresh session restored from the snapshot answers with equal
// values, and the open file and the generator are reported by name. Two
// sessions restored from one snapshot (a fork) are independent. Another
// owner cannot restore it. The call log carries over and exports as a
// notebook that nbformat validates.
func TestSnapshotSurvivesItsContainer(t *testing.T) {
	k, e, _ := dockerKeeper(t, DefaultConfig())
	ctx := context.Background()
	n := rows()
	t.Logf("DataFrame rows: %d", n)
	id := open(t, k, "alice")
	call(t, k, "alice", id, strings.ReplaceAll(strings.Replace(setup, "%d", strconv.Itoa(n), 1), "%%", "%"))
	before := call(t, k, "alice", id, strings.ReplaceAll(check, "%%", "%")).Stdout
	start := time.Now()
	res, err := k.Handle(ctx, core.Request{Op: core.OpSessionSnapshot, Owner: "alice", SessionID: id, SnapshotID: "snap1"})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	rep := res.Snapshot
	t.Logf("snapshot: %d bytes in %v, names %v, skipped %+v", rep.Bytes, time.Since(start), rep.Names, rep.Skipped)
	skipped := map[string]string{}
	for _, s := range rep.Skipped {
		skipped[s.Name] = s.Type + ": " + s.Reason
	}
	if !strings.Contains(skipped["f"], "open file") || !strings.Contains(skipped["gen"], "generator") || len(skipped) != 2 {
		t.Fatalf("skipped: %+v", rep.Skipped)
	}
	// The container goes away as with kill -9 of its worker.
	info, _ := e.Session("alice", id)
	if out, err := exec.Command("docker", "rm", "-f", info.Container).CombinedOutput(); err != nil {
		t.Fatalf("docker rm: %v %s", err, out)
	}
	if _, err := k.Handle(ctx, core.Request{Owner: "alice", SessionID: id, Code: "x"}); err == nil {
		t.Log("the removed session still answered")
	}
	// Another owner cannot restore it.
	bob := open(t, k, "bob")
	if _, err := k.Handle(ctx, core.Request{Op: core.OpSessionRestore, Owner: "bob", SessionID: bob, SnapshotID: "snap1"}); core.CodeOf(err) != core.ErrNotFound {
		t.Fatalf("bob restores alice's snapshot: %v", err)
	}
	a := open(t, k, "alice")
	start = time.Now()
	res, err = k.Handle(ctx, core.Request{Op: core.OpSessionRestore, Owner: "alice", SessionID: a, SnapshotID: "snap1", Restore: core.RestoreNamespace})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	t.Logf("restore: %v, skipped %+v", time.Since(start), res.Snapshot.Skipped)
	after := call(t, k, "alice", a, strings.ReplaceAll(check, "%%", "%")).Stdout
	if after != before {
		t.Fatalf("after the restore:\n%s\nbefore:\n%s", after, before)
	}
	// A fork: a second session from the same snapshot, changed; the first is not.
	b := open(t, k, "alice")
	if _, err := k.Handle(ctx, core.Request{Op: core.OpSessionRestore, Owner: "alice", SessionID: b, SnapshotID: "snap1"}); err != nil {
		t.Fatalf("restore the fork: %v", err)
	}
	call(t, k, "alice", b, "x = 99\np.x = 0\nopen('/work/data.txt', 'w').write('fork')")
	if got := call(t, k, "alice", a, strings.ReplaceAll(check, "%%", "%")).Stdout; got != before {
		t.Fatalf("the original changed with its fork:\n%s", got)
	}
	var fv map[string]any
	if err := json.Unmarshal([]byte(call(t, k, "alice", b, strings.ReplaceAll(check, "%%", "%")).Stdout), &fv); err != nil || fv["x"].(float64) != 99 || fv["file"] != "fork" {
		t.Fatalf("the fork: %v %v", fv, err)
	}
	// The call log came along; it exports as a valid notebook.
	calls, err := k.calls.Calls(ctx, "alice", a)
	if err != nil || len(calls) != 4 { // the snapshot's two, then two checks
		t.Fatalf("restored session's log: %d calls, %v", len(calls), err)
	}
	nb, err := Notebook(calls)
	if err != nil {
		t.Fatal(err)
	}
	validateNotebook(t, nb)
}

// validateNotebook checks nb with Debian's python3-nbformat (nbformat 4
// schema) and that it reads back.
func validateNotebook(t *testing.T, nb []byte) {
	t.Helper()
	if exec.Command("/usr/bin/python3", "-c", "import nbformat").Run() != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3-nbformat is missing (scripts/deps.sh test)")
		}
		t.Log("python3-nbformat missing: notebook not validated")
		return
	}
	path := filepath.Join(t.TempDir(), "nb.ipynb")
	if err := os.WriteFile(path, nb, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/usr/bin/python3", "-c", `import sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
print(len(nb.cells))`, path).CombinedOutput()
	if err != nil {
		t.Fatalf("nbformat: %v\n%s", err, out)
	}
}
