package keys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeysFileEgress: egress= and egress_methods= make a key's network
// policy; absent means none; an environment's list only narrows it; bad
// entries are refused naming the line and the entry.
func TestKeysFileEgress(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "keys")
	_ = os.WriteFile(file, []byte("alice:alice-key-0123456789abcdef egress=pypi.internal,*.data.example:8443 egress_methods=GET,HEAD\n"+
		"bob:bob-key-0123456789abcdef cpus=1\n"), 0o600)
	ks, err := Load(file, "")
	if err != nil {
		t.Fatal(err)
	}
	p := ks.Policy("alice")
	if p == nil || !p.Egress.Allows("pypi.internal", 443) || !p.Egress.Allows("x.data.example", 8443) ||
		p.Egress.Allows("x.data.example", 443) || p.Egress.Allows("other.example", 443) {
		t.Fatalf("alice's egress: %v", p)
	}
	if !p.Egress.AllowsMethod("HEAD") || p.Egress.AllowsMethod("POST") {
		t.Fatalf("alice's methods: %v", p.Egress.Methods())
	}
	if pol, err := EgressFor(ks.Policy("bob"), []string{"pypi.internal"}); err != nil || !pol.Empty() {
		t.Fatalf("bob has no egress, an environment cannot give him any: %v %v", pol, err)
	}
	if pol, err := EgressFor(nil, nil); err != nil || !pol.Empty() {
		t.Fatalf("no key policy: %v %v", pol, err)
	}
	pol, err := EgressFor(p, []string{"pypi.internal", "evil.example"})
	if err != nil || !pol.Allows("pypi.internal", 443) || pol.Allows("evil.example", 443) || pol.Allows("x.data.example", 8443) {
		t.Fatalf("narrowed: %v %v", pol, err)
	}
	if pol, err := EgressFor(p, nil); err != nil || !pol.Equal(p.Egress) {
		t.Fatalf("no environment list: %v %v", pol, err)
	}
	if pol, err := EgressFor(p, []string{}); err != nil || !pol.Empty() {
		t.Fatalf("an empty environment list: %v %v", pol, err)
	}
	if _, err := EgressFor(p, []string{"bad host!"}); err == nil || !strings.Contains(err.Error(), "bad host!") {
		t.Fatalf("a bad environment entry: %v", err)
	}
	for _, line := range []string{
		"alice:alice-key-0123456789abcdef egress=bad_host!",
		"alice:alice-key-0123456789abcdef egress=a.example egress_methods=FETCH",
		"alice:alice-key-0123456789abcdef egress_methods=GET",
	} {
		_ = os.WriteFile(file, []byte(line+"\n"), 0o600)
		if _, err := Load(file, ""); err == nil || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "egress") {
			t.Errorf("%s: %v, want a refusal naming line 1 and egress", line, err)
		}
	}
}
