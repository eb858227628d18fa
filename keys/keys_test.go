package keys

import (
	"fmt"
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

// TestKeysFileSecrets: secrets_file=PATH (relative to the keys file's
// folder, or absolute) gives a key its own secrets, read at load; they
// never print, and a missing or bad file fails the load naming the line.
func TestKeysFileSecrets(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "s"), 0o700); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "s", "alice"), []byte("alice-db-password\n"), 0o600)
	abs := filepath.Join(dir, "bob.secrets")
	_ = os.WriteFile(abs, []byte("bob-api-token-1\nbob-api-token-2\n"), 0o600)
	file := filepath.Join(dir, "keys")
	_ = os.WriteFile(file, []byte("alice:alice-key-0123456789abcdef secrets_file=s/alice\nbob:bob-key-0123456789abcdef secrets_file="+abs+" cpus=1\ncarol:carol-key-0123456789abcdef\n"), 0o600)
	ks, err := Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ks.Secrets("alice"); len(got) != 1 || got[0] != "alice-db-password" {
		t.Errorf("alice: %q", got)
	}
	if got := ks.Secrets("bob"); len(got) != 2 || got[1] != "bob-api-token-2" {
		t.Errorf("bob: %q", got)
	}
	if got := ks.Secrets("carol"); got != nil {
		t.Errorf("carol: %q", got)
	}
	if s := fmt.Sprintf("%v %+v", *ks.Policy("alice"), ks.Policy("bob")); strings.Contains(s, "password") || strings.Contains(s, "token") {
		t.Errorf("a policy prints its secrets: %s", s)
	}
	for _, line := range []string{"alice:alice-key-0123456789abcdef secrets_file=missing", "alice:alice-key-0123456789abcdef secrets_file=s"} {
		_ = os.WriteFile(file, []byte(line+"\n"), 0o600)
		if _, err := Load(file, ""); err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "secrets_file") {
			t.Errorf("%q: %v", line, err)
		}
	}
}

// TestKeysFileTimeout: an absurd timeout_seconds is refused instead of
// wrapping around.
func TestKeysFileTimeout(t *testing.T) {
	file := filepath.Join(t.TempDir(), "k")
	for line, ok := range map[string]bool{"timeout_seconds=60": true, "timeout_seconds=0": true, "timeout_seconds=9.3e9": false, "timeout_seconds=-5": false} {
		_ = os.WriteFile(file, []byte("alice:alice-key-0123456789abcdef "+line+"\n"), 0o600)
		if _, err := Load(file, ""); (err == nil) != ok {
			t.Errorf("%s: %v", line, err)
		}
	}
}
