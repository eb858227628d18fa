package sandbox

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// TestLargeInputStreamed (real Docker): a 40 MiB input folder (over
// core.MaxArchiveBytes, the most one request line carries) reaches
// /workspace whole, byte for byte, in a one-shot call (cold and on an
// owner's warm container, twice: nothing of the first copy is left for the
// second) and in a session, with 160 MiB of memory_bytes: the streamed
// copy needs the files and a few MiB, where a copy in one line needed six
// times the tar (272 MiB). A folder past the server's --input-max-bytes is
// refused naming it.
func TestLargeInputStreamed(t *testing.T) {
	// Not parallel: 160 MiB copies through three containers and a warm pool
	// booting beside other tests overran the pool wait on a loaded machine.
	dir := t.TempDir()
	h := sha256.New()
	for i := range 5 {
		b := make([]byte, 8<<20)
		_, _ = rand.Read(b)
		h.Write(b)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part%d.bin", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := fmt.Sprintf("5 %d %s", 40<<20, hex.EncodeToString(h.Sum(nil)))
	code := "import hashlib, os\nh = hashlib.sha256()\nnames = sorted(os.listdir('/workspace'))\n" +
		"for n in names:\n    h.update(open('/workspace/' + n, 'rb').read())\n" +
		"print(len(names), sum(os.path.getsize('/workspace/' + n) for n in names), h.hexdigest())"
	lim := core.Limits{Memory: 160 << 20, TmpfsBytes: 64 << 20, Timeout: testscale.D(60 * time.Second)}
	if inputMemoryLine(40<<20) <= lim.Memory {
		t.Fatal("the test no longer shows the streamed copy's memory rule")
	}
	cold := newTestEngine(t, nil)
	warm := pooledEngine(t, nil)
	for name, e := range map[string]*Engine{"cold": cold, "warm": warm, "warm again": warm} {
		r := run(t, e, core.Request{Owner: "big", Mount: dir, Code: code, Limits: lim})
		if r.Status != core.StatusOK || strings.TrimSpace(r.Stdout) != want {
			t.Fatalf("%s: %s, want %q", name, brief(r), want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(2*time.Minute))
	defer cancel()
	info, rej, err := cold.OpenSession(ctx, core.Request{Owner: "big", Mount: dir, Limits: lim})
	if err != nil || rej != nil {
		t.Fatalf("open: %v %+v", err, rej)
	}
	defer func() { _ = cold.CloseSession("big", info.ID) }()
	if r := sessionRun(t, cold, "big", info.ID, code); strings.TrimSpace(r.Stdout) != want {
		t.Fatalf("session: %s", brief(r))
	}
	small := newTestEngine(t, func(c *Config) { c.InputMaxBytes = 32 << 20 })
	r := run(t, small, core.Request{Owner: "big", Mount: dir, Code: code, Limits: lim})
	if r.Status != core.StatusRejected || !strings.Contains(r.Message, "33554432") || !strings.Contains(r.Message, "--input-max-bytes") {
		t.Fatalf("over --input-max-bytes: %s", brief(r))
	}
}
