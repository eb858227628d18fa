package secrets

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFile: one literal value per line, blank lines skipped, values
// kept byte for byte; short values and oversized files refused without
// quoting a value; a Values never prints its values.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	v, err := ReadFile(write("ok", "db-password-1\r\n\n  \n# not a comment: a value\n with spaces \nlast-no-newline"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"db-password-1", "# not a comment: a value", " with spaces ", "last-no-newline"}
	if fmt.Sprint(v.List()) != fmt.Sprint(want) || v.Len() != 4 {
		t.Fatalf("values %q, want %q", v.List(), want)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("cfg", "secrets", v)
	js, _ := json.Marshal(struct{ S Values }{v})
	for _, shown := range []string{v.String(), fmt.Sprintf("%v %+v %#v %s", v, v, v, v), string(js), logged.String()} {
		if strings.Contains(shown, "db-password") || !strings.Contains(shown, "4") {
			t.Errorf("shown as %q", shown)
		}
	}
	if _, err := ReadFile(write("short", "long-enough-value\nabc\n")); err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "abc") {
		t.Errorf("short value: %v", err)
	}
	if _, err := ReadFile(write("big", strings.Repeat("x", MaxFileBytes+10))); err == nil || strings.Contains(err.Error(), "xxx") {
		t.Errorf("oversized file: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file accepted")
	}
}
