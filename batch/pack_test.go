package batch

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func untarAll(t *testing.T, data []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			b, _ := io.ReadAll(tr)
			out[h.Name] = string(b)
		case tar.TypeSymlink:
			out[h.Name] = "-> " + h.Linkname
		case tar.TypeDir:
			out[h.Name] = "/"
		}
	}
}

func TestPackFolderKeepsFilesAndInsideLinks(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.py": "print(1)\n", "pkg/b.py": "x = 2\n", "pkg/sub/c.txt": ""})
	if err := os.Symlink("../a.py", filepath.Join(dir, "pkg", "link.py")); err != nil {
		t.Fatal(err)
	}
	data, err := packFolder(dir, 1<<20, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := untarAll(t, data)
	want := map[string]string{"a.py": "print(1)\n", "pkg/": "/", "pkg/b.py": "x = 2\n", "pkg/sub/": "/", "pkg/sub/c.txt": "", "pkg/link.py": "-> ../a.py"}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

func TestPackFolderFallsBack(t *testing.T) {
	big := writeTree(t, map[string]string{"big.bin": strings.Repeat("x", 64<<10)})
	many := writeTree(t, map[string]string{"1": "", "2": "", "3": "", "4": ""})
	out := writeTree(t, map[string]string{"a": "a"})
	if err := os.Symlink("/etc/passwd", filepath.Join(out, "passwd")); err != nil {
		t.Fatal(err)
	}
	up := writeTree(t, map[string]string{"a": "a"})
	if err := os.Symlink("../../secret", filepath.Join(up, "s")); err != nil {
		t.Fatal(err)
	}
	// A chain: each link reads as inside, but together they leave.
	chain := writeTree(t, map[string]string{"sub/a": "a"})
	if err := os.Symlink("..", filepath.Join(chain, "sub", "lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("lnk/../x", filepath.Join(chain, "sub", "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(chain), "x"), []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := writeTree(t, map[string]string{"a": "a"})
	if err := syscall.Mkfifo(filepath.Join(fifo, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dir, want string
	}{
		{big, "packs to over 32768 bytes"},
		{many, "over 3 entries"},
		{out, "passwd is a link out of the item folder"},
		{up, "s is a link out of the item folder"},
		{chain, "sub/b is a link out of the item folder"},
		{fifo, "pipe is not a regular file"},
	} {
		_, err := packFolder(c.dir, 32<<10, 3)
		reason, ok := isNoPack(err)
		if !ok || !strings.Contains(reason, c.want) {
			t.Errorf("%s: %v, want a fallback saying %q", c.dir, err, c.want)
		}
		if strings.Contains(reason, c.dir) {
			t.Errorf("the reason %q names the host path", reason)
		}
	}
}
