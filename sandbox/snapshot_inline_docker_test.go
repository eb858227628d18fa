package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestSnapshotInlineDocker: the image's controller sends a small
// snapshot inline (featureSnapInline), and what it sent restores: a second
// session loaded from those parts has the first one's names and /work.
func TestSnapshotInlineDocker(t *testing.T) {
	t.Parallel() // functional: containers of its own engine only
	e, ctx, a := snapSession(t)
	if ss, err := e.sessions.get("o", a); err != nil || !ss.box.has(featureSnapInline) {
		t.Fatalf("the image's controller does not send snapshots inline (%v): rebuild it (make images)", err)
	}
	sexec(t, e, a, "o", core.Python, "x = 41\nopen('/work/f.txt', 'w').write('kept')", core.Limits{})
	sexec(t, e, a, "o", core.Python, "y = 1", core.Limits{})
	parts, rep := snapshotParts(ctx, t, e, a)
	if rep.Bytes == 0 || rep.Bytes > snapInline {
		t.Fatalf("snapshot: %+v", rep)
	}
	b := openSession(t, e, "o")
	restoreParts(ctx, t, e, b.ID, "namespace", parts)
	res := sexec(t, e, b.ID, "o", core.Python, "print(x + 1, open('/work/f.txt').read())", core.Limits{})
	if strings.TrimSpace(res.Stdout) != "42 kept" {
		t.Fatalf("the restored session printed %q", res.Stdout)
	}
	// The count goes on from the two calls saved, as after a wake or fork.
	if res.ExecutionCount != 3 {
		t.Fatalf("first call after the restore: execution_count %d, want 3 (the snapshot held 2)", res.ExecutionCount)
	}
	// Restored into a session that ran more calls, the count never goes back;
	// a files-only restore leaves it alone.
	for range 3 {
		sexec(t, e, b.ID, "o", core.Python, "pass", core.Limits{})
	}
	restoreParts(ctx, t, e, b.ID, "namespace", parts)
	restoreParts(ctx, t, e, b.ID, "files", parts)
	if res := sexec(t, e, b.ID, "o", core.Python, "print(x)", core.Limits{}); res.ExecutionCount != 7 {
		t.Fatalf("after restoring an older snapshot: execution_count %d, want 7", res.ExecutionCount)
	}
}

// snapSession starts an engine and opens a session of owner "o" in it;
// ctx ends with the test (2 minutes at most, scaled).
func snapSession(t *testing.T) (*Engine, context.Context, string) {
	t.Helper()
	e := newTestEngine(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	t.Cleanup(cancel)
	return e, ctx, openSession(t, e, "o").ID
}

// snapshotParts snapshots owner "o"'s session id and returns its parts.
func snapshotParts(ctx context.Context, t *testing.T, e *Engine, id string) (map[string][]byte, core.SnapshotReport) {
	t.Helper()
	parts := map[string][]byte{}
	rep, err := e.SnapshotSession(ctx, "o", id, 64<<20, func(part string, _ int64, chunk []byte) error {
		parts[part] = append(parts[part], chunk...)
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	return parts, rep
}

// restoreParts restores parts into owner "o"'s session id (mode namespace or files).
func restoreParts(ctx context.Context, t *testing.T, e *Engine, id, mode string, parts map[string][]byte) {
	t.Helper()
	if _, err := e.RestoreSession(ctx, "o", id, mode, 64<<20, func(part string, write func([]byte) error) error {
		return write(parts[part])
	}); err != nil {
		t.Fatalf("restore: %v", err)
	}
}

// snapWorkShapes makes /work hold every shape a snapshot keeps: a nested
// file, an empty folder, a link to a file and one to a folder (kept as
// links, not followed), a second hard link to a file (kept as a link: one
// file, two names) and a folder its owner made unreadable.
const snapWorkShapes = `
import os
os.makedirs('/work/a/b/c')
open('/work/a/b/c/deep.txt', 'w').write('deep')
os.makedirs('/work/empty')
os.symlink('a/b/c/deep.txt', '/work/to_file')
os.symlink('a/b', '/work/to_dir')
open('/work/one.txt', 'w').write('one')
os.link('/work/one.txt', '/work/two.txt')
os.makedirs('/work/locked')
open('/work/locked/in.txt', 'w').write('in')
os.chmod('/work/locked', 0)
`

// snapWorkCheck prints what the restored /work holds, one fact a line.
const snapWorkCheck = `
import os
print(open('/work/a/b/c/deep.txt').read())
print(os.path.isdir('/work/empty') and not os.listdir('/work/empty'))
print(os.readlink('/work/to_file'), os.readlink('/work/to_dir'))
print(open('/work/to_file').read())
a, b = os.stat('/work/one.txt'), os.stat('/work/two.txt')
print(a.st_ino == b.st_ino, a.st_nlink)
print(os.path.isdir('/work/locked'))
`

// TestSnapshotKeepsWorkShapes: a snapshot packs /work from a folder
// descriptor, entry by entry, and a session restored from it has the same
// tree: nested files, empty folders, links kept as links, hard links as
// one file, an unreadable folder packed (empty) instead of failing.
func TestSnapshotKeepsWorkShapes(t *testing.T) {
	t.Parallel() // functional: containers of its own engine only
	e, ctx, a := snapSession(t)
	if r := sexec(t, e, a, "o", core.Python, snapWorkShapes, core.Limits{}); r.Status != core.StatusOK {
		t.Fatalf("making /work: %s", brief(r))
	}
	parts, rep := snapshotParts(ctx, t, e, a)
	// The outputs folder, a, a/b, a/b/c, deep.txt, empty, to_file, to_dir,
	// one.txt, two.txt, locked (its file unread).
	if rep.Entries != 11 {
		t.Errorf("snapshot packed %d entries of /work, want 11", rep.Entries)
	}
	b := openSession(t, e, "o")
	restoreParts(ctx, t, e, b.ID, "files", parts)
	res := sexec(t, e, b.ID, "o", core.Python, snapWorkCheck, core.Limits{})
	want := "deep\nTrue\na/b/c/deep.txt a/b\ndeep\nTrue 2\nTrue\n"
	if res.Status != core.StatusOK || res.Stdout != want {
		t.Fatalf("restored /work: %s\nstdout %q\nwant   %q", brief(res), res.Stdout, want)
	}
}

// TestSnapshotRefusesTooDeepWork: /work with folders nested 64 deep, which
// a restore could not recreate, fails the snapshot with a message naming
// the depth, instead of a snapshot that cannot be restored.
func TestSnapshotRefusesTooDeepWork(t *testing.T) {
	t.Parallel() // functional: containers of its own engine only
	e, ctx, a := snapSession(t)
	if r := sexec(t, e, a, "o", core.Python, "import os\nos.makedirs('/work/' + '/'.join(['d'] * 64))", core.Limits{}); r.Status != core.StatusOK {
		t.Fatalf("making /work: %s", brief(r))
	}
	_, err := e.SnapshotSession(ctx, "o", a, 64<<20, func(string, int64, []byte) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "nested 64 deep") {
		t.Fatalf("snapshot of a 64-deep /work: %v, want an error naming the depth", err)
	}
}
