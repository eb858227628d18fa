package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKeySet(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	content := "# airlock keys\n\nci:ci-key-0123456789abcdef\n  plain-key-0123456789abcdef  \n"
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	ks, err := Load(file, " env-key-0123456789abcdef , ,batch:batch-key-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	if ks.Len() != 4 {
		t.Fatalf("len %d", ks.Len())
	}
	for key, want := range map[string]string{"ci-key-0123456789abcdef": "ci", "batch-key-0123456789abcdef": "batch"} {
		if o, ok := ks.Owner(key); !ok || o != want {
			t.Errorf("%s: %q %v", key, o, ok)
		}
	}
	if o, ok := ks.Owner("plain-key-0123456789abcdef"); !ok || !strings.HasPrefix(o, "key-") || len(o) != 16 {
		t.Errorf("unnamed owner %q", o)
	}
	for _, bad := range []string{"", "ci", "ci-key-0123456789abcde", "ci:ci-key-0123456789abcdef "} {
		if _, ok := ks.Owner(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	// Keys are held hashed: the plain text is nowhere in the set.
	for _, e := range ks.entries {
		if strings.Contains(string(e.hash[:]), "0123456789") {
			t.Fatal("plain key stored")
		}
	}
	if _, err := Load("", "short"); err == nil {
		t.Error("short key accepted")
	}
	if _, err := Load("", "dup-key-0123456789abcdef,dup-key-0123456789abcdef"); err == nil {
		t.Error("duplicate accepted")
	}
	if _, err := Load(filepath.Join(dir, "missing"), ""); err == nil {
		t.Error("missing file accepted")
	}
	var nilSet *Set
	if _, ok := nilSet.Owner("x"); ok || nilSet.Len() != 0 {
		t.Error("nil set")
	}
	// A colon inside a key without a valid name keeps the whole entry as the key.
	ks2, err := New("not a name:with-spaces-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ks2.Owner("not a name:with-spaces-0123456789"); !ok {
		t.Error("entry with colon")
	}
}

func TestKeysFilePolicyErrors(t *testing.T) {
	dir := t.TempDir()
	for _, line := range []string{"alice:" + "alice-key-0123456789abcdef" + " memory=1g", "alice:" + "alice-key-0123456789abcdef" + " cpus=lots", "alice:" + "alice-key-0123456789abcdef" + " background"} {
		file := filepath.Join(dir, "k")
		_ = os.WriteFile(file, []byte(line+"\n"), 0o600)
		if _, err := Load(file, ""); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("%q: %v", line, err)
		}
	}
}
