package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvironmentsPolicy: environments= lists the custom environments a
// key may use (built-ins always), admin=true may use every one, and a bad
// name or flag is refused naming the field.
func TestEnvironmentsPolicy(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	content := "geo:geo-key-0123456789abcdef environments=geo,lint-2\nroot:root-key-0123456789abcdef admin=true\nplain:plain-key-0123456789abcd\n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		owner, env string
		ok         bool
	}{
		{"geo", "geo", true}, {"geo", "lint-2", true}, {"geo", "other", false}, {"geo", "python", true},
		{"root", "anything", true}, {"plain", "geo", false}, {"plain", "shell", true}, {"nobody", "geo", false},
	} {
		if got := ks.Policy(c.owner).MayUseEnvironment(c.env); got != c.ok {
			t.Errorf("%s may use %s: %v, want %v", c.owner, c.env, got, c.ok)
		}
	}
	if !ks.Policy("root").IsAdmin() || ks.Policy("geo").IsAdmin() || ks.Policy("nobody").IsAdmin() {
		t.Error("admin flags wrong")
	}
	for _, bad := range []string{"environments=Geo!", "admin=maybe"} {
		if err := os.WriteFile(file, []byte("x:x-key-0123456789abcdefgh "+bad+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		name, _, _ := strings.Cut(bad, "=")
		if _, err := Load(file, ""); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
