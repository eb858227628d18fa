package e2e

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// inputDigestCode prints the number of files under /workspace, their bytes
// and one SHA-256 over every file's relative path and content, in sorted
// order: what the test computes on the host for the same folder.
const inputDigestCode = `import hashlib, os
h, n, size = hashlib.sha256(), 0, 0
for root, dirs, files in os.walk('/workspace'):
    dirs.sort()
    for f in sorted(files):
        p = os.path.join(root, f)
        data = open(p, 'rb').read()
        h.update(os.path.relpath(p, '/workspace').encode() + b'\0' + data)
        n, size = n + 1, size + len(data)
print(n, size, h.hexdigest())`

// largeFolder writes a folder of 3 files of 8 MiB of random bytes (24 MiB:
// over core.MaxArchiveBytes, the most one archive message carries) and 300
// small files in nested folders, and returns what inputDigestCode prints
// for it.
func largeFolder(t *testing.T, dir string) string {
	t.Helper()
	files := map[string][]byte{}
	for i := range 3 {
		b := make([]byte, 8<<20)
		_, _ = rand.Read(b)
		files[fmt.Sprintf("data/blob%d.bin", i)] = b
	}
	for i := range 300 {
		files[fmt.Sprintf("src/pkg%02d/mod%03d.py", i%10, i)] = []byte(fmt.Sprintf("X = %d\n", i))
	}
	for rel, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The same walk as the code: folders and files sorted, os.walk order.
	h, n, size := sha256.New(), 0, 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b := files[filepath.ToSlash(rel)]
		h.Write(append([]byte(rel+"\x00"), b...))
		n, size = n+1, size+len(b)
		return nil
	})
	return fmt.Sprintf("%d %d %s", n, size, hex.EncodeToString(h.Sum(nil)))
}

// TestLargeInputFolders: input folders over 16 MiB, which the sandbox used
// to refuse once inputs were copied in one message, reach /workspace whole,
// streamed in chunks: a batch item (too large to pack into an archive, so
// its folder goes to the worker) and a one-shot `airlock exec --mount`.
func TestLargeInputFolders(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	root := t.TempDir()
	want := largeFolder(t, filepath.Join(root, "repos", "big"))
	if err := os.MkdirAll(filepath.Join(root, "repos", "small"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "repos", "small", "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("exec --mount", func(t *testing.T) {
		t.Parallel()
		p := startProc(t, "airlock exec", "exec", "--mount", filepath.Join(root, "repos", "big"), "run_python", inputDigestCode)
		if code := p.wait(testscale.D(3 * time.Minute)); code != 0 {
			t.Fatalf("exit %d: %s %s", code, p.stdout.String(), tail(p.stderr.String(), 2000))
		}
		if got := p.stdout.String(); !strings.Contains(got, want) {
			t.Fatalf("the folder in the sandbox: %q, want %q", got, want)
		}
	})
	t.Run("batch item", func(t *testing.T) {
		t.Parallel()
		s := startServe(t, "--input", "src="+root)
		spec := map[string]any{
			"tool_call": map[string]any{"type": "function", "function": map[string]any{"name": "run_python", "arguments": map[string]any{"code": inputDigestCode}}},
			"each":      "repos/*", "input": "src",
		}
		id := do(t, "POST", s.URL+"/v1/batches", spec).must(t, 201).JSON(t)["id"].(string)
		b := waitBatch(t, s.URL, id, testscale.D(5*time.Minute), "completed", "failed")
		if tot, ok, bad := counts(b); tot != 2 || ok != 2 || bad != 0 {
			t.Fatalf("request_counts %d/%d/%d, want 2 completed", tot, ok, bad)
		}
		for _, l := range results(t, s.URL+"/v1/batches/"+id+"/results") {
			switch {
			case l.Status != "ok":
				t.Errorf("%s: %s %q %q", l.CustomID, l.Status, l.Stdout, l.Stderr)
			case strings.HasSuffix(l.CustomID, "big") && (!strings.Contains(l.Stdout, want) || l.InputMode != "mount"):
				t.Errorf("big: stdout %q input_mode %q (%s), want %q from the streamed folder", l.Stdout, l.InputMode, l.InputNote, want)
			case strings.HasSuffix(l.CustomID, "small") && (!strings.HasPrefix(l.Stdout, "1 1 ") || l.InputMode != "archive"):
				t.Errorf("small: stdout %q input_mode %q", l.Stdout, l.InputMode)
			}
		}
	})
}
