package agent

import (
	"strings"
	"testing"
)

func TestRedactorNamesNothing(t *testing.T) {
	key := "sk-test-" + strings.Repeat("k", 24)
	r := newRedactor(key, "short")
	if got := r.String("key=" + key + " short"); got != "key=[REDACTED] short" {
		t.Errorf("String: %q", got)
	}
	in := []byte("no secret here")
	if got := r.Bytes(in); &got[0] != &in[0] {
		t.Error("Bytes copied text without a secret")
	}
	if got := string(r.Bytes([]byte(key))); got != "[REDACTED]" {
		t.Errorf("Bytes: %q", got)
	}
}
