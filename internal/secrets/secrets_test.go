package secrets

import (
	"strings"
	"testing"
)

func TestLooksSecret(t *testing.T) {
	for _, n := range []string{"DB_PASSWORD", "github_token", "AWS_SECRET_ACCESS_KEY", "MY_PASSWD", "SESSION_ID", "Cookie", "X_AUTH"} {
		if !LooksSecret(n) {
			t.Errorf("%s should look secret", n)
		}
	}
	for _, n := range []string{"PATH", "HOME", "LANG", "TZ", "COLUMNS"} {
		if LooksSecret(n) {
			t.Errorf("%s should not look secret", n)
		}
	}
	w := NameWords()
	w[0] = "changed"
	if NameWords()[0] == "changed" {
		t.Error("NameWords returned the shared slice")
	}
}

func TestRedactPatterns(t *testing.T) {
	gh := "ghp_" + strings.Repeat("x9Y8", 9)
	out := RedactPatterns("token " + gh + " end")
	if out != "token [REDACTED:github_token] end" {
		t.Errorf("got %q", out)
	}
	out = RedactPatterns("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345")
	if out != "Authorization: Bearer [REDACTED:bearer_token]" {
		t.Errorf("labelled: %q", out)
	}
	if s := "ordinary text sk-short"; RedactPatterns(s) != s {
		t.Errorf("over-redacted %q", s)
	}
}

func TestLiterals(t *testing.T) {
	l := NewLiterals("corp-secret", "corp-secret-longer", "abc", "")
	out := l.Replace("a corp-secret-longer b corp-secret c abc")
	if out != "a [REDACTED] b [REDACTED] c abc" {
		t.Errorf("got %q", out)
	}
	var nilL *Literals
	if nilL.Replace("x") != "x" {
		t.Error("nil Literals changed text")
	}
}
