package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysFilePipPackages: pip_packages= restricts the package names a
// key's calls may download, in PEP 503's normal form; without egress
// hosts, or with a bad name, the file is refused.
func TestKeysFilePipPackages(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	_ = os.WriteFile(file, []byte("alice:alice-key-0123456789abcdef egress=pypi.internal:80 pip_packages=NumPy,Foo_Bar\n"), 0o600)
	ks, err := Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	p := ks.Policy("alice")
	if got := strings.Join(p.Egress.Packages(), ","); got != "foo-bar,numpy" || !strings.HasSuffix(p.Egress.String(), ";pip=foo-bar,numpy") {
		t.Fatalf("alice's packages: %q (%s)", got, p.Egress.String())
	}
	for line, want := range map[string]string{
		"bob:bob-key-0123456789abcdef pip_packages=numpy\n":                    "without egress hosts",
		"bob:bob-key-0123456789abcdef egress=pypi.internal pip_packages=a/b\n": "a/b",
	} {
		_ = os.WriteFile(file, []byte(line), 0o600)
		if _, err := Load(file, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error naming %q", line, err, want)
		}
	}
}
