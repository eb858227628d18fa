package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

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
	e := newTestEngine(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	a := openSession(t, e, "o")
	if r := sexec(t, e, a.ID, "o", core.Python, snapWorkShapes, core.Limits{}); r.Status != core.StatusOK {
		t.Fatalf("making /work: %s", brief(r))
	}
	parts := map[string][]byte{}
	rep, err := e.SnapshotSession(ctx, "o", a.ID, 64<<20, func(part string, _ int64, chunk []byte) error {
		parts[part] = append(parts[part], chunk...)
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	// The outputs folder, a, a/b, a/b/c, deep.txt, empty, to_file, to_dir,
	// one.txt, two.txt, locked (its file unread).
	if rep.Entries != 11 {
		t.Errorf("snapshot packed %d entries of /work, want 11", rep.Entries)
	}
	b := openSession(t, e, "o")
	if _, err := e.RestoreSession(ctx, "o", b.ID, "files", 64<<20, func(part string, write func([]byte) error) error {
		return write(parts[part])
	}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	res := sexec(t, e, b.ID, "o", core.Python, snapWorkCheck, core.Limits{})
	want := "deep\nTrue\na/b/c/deep.txt a/b\ndeep\nTrue 2\nTrue\n"
	if res.Status != core.StatusOK || res.Stdout != want {
		t.Fatalf("restored /work: %s\nstdout %q\nwant   %q", brief(res), res.Stdout, want)
	}
	if !strings.Contains(string(parts["work"]), "deep") {
		t.Errorf("the work part does not hold the nested file's bytes")
	}
}
