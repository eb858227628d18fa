package links

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStaysIn(t *testing.T) {
	for _, tc := range []struct {
		rel, target string
		want        bool
	}{
		{"a", "b", true},
		{"d/a", "../b", true},
		{"d/a", "../../b", false},
		{"a", "/etc/passwd", false},
		{"a", "", false},
		{"a", "x\\y", false},
		{"a", "x\x00", false},
		{"a", string(make([]byte, maxTarget+1)), false},
	} {
		if got := StaysIn(tc.rel, tc.target); got != tc.want {
			t.Errorf("StaysIn(%q, %.20q) = %v, want %v", tc.rel, tc.target, got, tc.want)
		}
	}
}

func TestResolvesIn(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "in")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"inside": ".", "out": "..", "dangling": "nothing", "chain": "out/in"} {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string]bool{"inside": true, "out": false, "dangling": true, "chain": true} {
		if got := ResolvesIn(dir, filepath.Join(dir, name)); got != want {
			t.Errorf("ResolvesIn(%s) = %v, want %v", name, got, want)
		}
	}
}
