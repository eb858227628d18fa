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
	e := newTestEngine(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	a := openSession(t, e, "o")
	if ss, err := e.sessions.get("o", a.ID); err != nil || !ss.box.has(featureSnapInline) {
		t.Fatalf("the image's controller does not send snapshots inline (%v): rebuild it (make images)", err)
	}
	sexec(t, e, a.ID, "o", core.Python, "x = 41\nopen('/work/f.txt', 'w').write('kept')", core.Limits{})
	parts := map[string][]byte{}
	rep, err := e.SnapshotSession(ctx, "o", a.ID, 64<<20, func(part string, _ int64, chunk []byte) error {
		parts[part] = append(parts[part], chunk...)
		return nil
	})
	if err != nil || rep.Bytes == 0 || rep.Bytes > snapInline {
		t.Fatalf("snapshot: %+v %v", rep, err)
	}
	b := openSession(t, e, "o")
	if _, err := e.RestoreSession(ctx, "o", b.ID, "namespace", 64<<20, func(part string, write func([]byte) error) error {
		return write(parts[part])
	}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	res := sexec(t, e, b.ID, "o", core.Python, "print(x + 1, open('/work/f.txt').read())", core.Limits{})
	if strings.TrimSpace(res.Stdout) != "42 kept" {
		t.Fatalf("the restored session printed %q", res.Stdout)
	}
}
