package mcpserver

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// fakeSnaps records the snapshot side of a local stack.
type fakeSnaps struct {
	mu       sync.Mutex
	taken    []string // session/snapshot/hidden
	restored []string // session/snapshot
	deleted  []string
}

func (f *fakeSnaps) SnapshotSessionIn(_ context.Context, _, id, snapID, env string, limits core.Limits, _, hidden bool) (core.SnapshotReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := ""
	if hidden {
		h = "/hidden"
	}
	f.taken = append(f.taken, id+"/"+snapID+h)
	return core.SnapshotReport{Bytes: 42, Names: []string{"x"}, Skipped: []core.SnapshotSkip{{Name: "fh", Type: "TextIOWrapper", Reason: "open file"}}}, nil
}

func (f *fakeSnaps) RestoreSession(_ context.Context, _, id, snapID, _ string) (core.SnapshotReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restored = append(f.restored, id+"/"+snapID)
	return core.SnapshotReport{Names: []string{"x"}}, nil
}

func (f *fakeSnaps) Delete(_ context.Context, _, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, id)
	return nil
}

// TestLocalSnapshotTools: the local backend (airlock mcp, and /mcp on
// serve) offers snapshot_session and fork_session when its stack takes
// snapshots, as `airlock mcp --server` does (issue 30: "MCP (a snapshot
// and a fork tool)"); they were missing. A fork opens its session as the
// original was opened, restores into it, moves the MCP session's calls
// there and deletes its passing snapshot; without snapshots neither tool
// is listed.
func TestLocalSnapshotTools(t *testing.T) {
	fe, fs := newFakeExec(), &fakeSnaps{}
	d := dispatcher.New(dispatcher.DefaultConfig(), fe, nil)
	srv := startServer(t, Config{Limits: core.Limits{Memory: 300 << 20}}, Deps{Dispatcher: d, Executor: fe, Snapshots: &SnapshotOptions{Snapshotter: fs, Store: fs}})
	h := &harness{srv: srv, exec: fe, disp: d}
	cs := h.connect(t, "alice", nil)
	names := toolNames(t, cs)
	for _, want := range []string{ToolSnapshotSession, ToolForkSession} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools %v lack %s", names, want)
		}
	}
	if res := call(t, cs, "run_python", map[string]any{"code": "x = 1"}); res.IsError {
		t.Fatalf("call: %s", text(t, res))
	}
	snap := call(t, cs, ToolSnapshotSession, map[string]any{})
	if snap.IsError || !strings.Contains(text(t, snap), `"snapshot_id":"snap-`) || !strings.Contains(text(t, snap), `"fh"`) {
		t.Fatalf("snapshot: %s", text(t, snap))
	}
	fork := call(t, cs, ToolForkSession, map[string]any{})
	if fork.IsError || !strings.Contains(text(t, fork), `"session_id":"s-2"`) || !strings.Contains(text(t, fork), `"forked_from":"s-1"`) {
		t.Fatalf("fork: %s", text(t, fork))
	}
	if res := call(t, cs, "run_python", map[string]any{"code": "print(x)"}); res.IsError {
		t.Fatalf("call after fork: %s", text(t, res))
	}
	if used := fe.sessionsUsed(); strings.Join(used, " ") != "s-1 s-2" {
		t.Fatalf("calls ran in %v, want s-1 then the fork s-2", used)
	}
	fe.mu.Lock()
	var opens []core.Request
	for _, r := range fe.reqs {
		if r.Op == core.OpSessionOpen {
			opens = append(opens, r)
		}
	}
	fe.mu.Unlock()
	if len(opens) != 2 || opens[1].Limits.Memory != 300<<20 {
		t.Fatalf("opens %+v, want the fork opened with the original's limits", opens)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.taken) != 2 || !strings.HasSuffix(fs.taken[1], "/hidden") || len(fs.restored) != 1 || !strings.HasPrefix(fs.restored[0], "s-2/") {
		t.Fatalf("taken %v restored %v", fs.taken, fs.restored)
	}
	if len(fs.deleted) != 1 || !strings.HasSuffix(fs.taken[1], fs.deleted[0]+"/hidden") {
		t.Fatalf("deleted %v, want the fork's passing snapshot %v", fs.deleted, fs.taken[1])
	}
}

// TestLocalWithoutSnapshotsListsNoSnapshotTools: a local stack that takes
// no snapshots does not offer tools that could only fail.
func TestLocalWithoutSnapshotsListsNoSnapshotTools(t *testing.T) {
	h := newHarness(t, nil)
	names := toolNames(t, h.connect(t, "alice", nil))
	if slices.Contains(names, ToolSnapshotSession) || slices.Contains(names, ToolForkSession) {
		t.Fatalf("tools %v offer snapshots without a snapshot store", names)
	}
}

// toolNames lists the tools cs sees.
func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestServeMCPSessionsGetTheKeysEgress: the sessions /mcp opens on serve
// (Deps without a Backend) carry the key's network policy, as its REST
// sessions do; Deps had no way to pass it, so a key with egress= had no
// network through /mcp (every MCP call runs in the MCP session's session).
func TestServeMCPSessionsGetTheKeysEgress(t *testing.T) {
	fe := newFakeExec()
	d := dispatcher.New(dispatcher.DefaultConfig(), fe, nil)
	srv, err := New(Config{}, Deps{Dispatcher: d, Executor: fe, Egress: func(owner string, _ []string) string {
		if owner == "alice" {
			return "pypi.internal"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	h := &harness{srv: srv, exec: fe, disp: d}
	if res := call(t, h.connect(t, "alice", nil), "run_python", map[string]any{"code": "x = 1"}); res.IsError {
		t.Fatalf("call: %s", text(t, res))
	}
	fe.mu.Lock()
	defer fe.mu.Unlock()
	for _, r := range fe.reqs {
		if r.Op == core.OpSessionOpen {
			if r.Egress != "pypi.internal" {
				t.Fatalf("session opened with egress %q, want the key's pypi.internal", r.Egress)
			}
			return
		}
	}
	t.Fatal("no session opened")
}
