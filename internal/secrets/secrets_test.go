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

// patternSamples holds a match of each known format, in some text.
var patternSamples = map[string]string{
	"private_key":    "x -----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY----- y",
	"openai_key":     "key=sk-proj-" + strings.Repeat("aB3_", 6),
	"aws_access_key": "id AKIA" + strings.Repeat("Q7", 8) + " end",
	"aws_secret_key": "AWS_SECRET_ACCESS_KEY=" + strings.Repeat("abC/+9", 6),
	"github_token":   "t github_pat_" + strings.Repeat("a1_", 11),
	"slack_token":    "xoxb-123456789012-abc",
	"google_api_key": "k=AIza" + strings.Repeat("x", 35),
	"stripe_key":     "rk_test_" + strings.Repeat("Z9", 9),
	"jwt":            "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl",
	"bearer_token":   "bearer " + strings.Repeat("tok.", 6),
}

// TestRedactPatternsEveryFormat: each format is found in its sample, and
// skipping the text that holds none of a format's needles never skips a
// match: over samples, their pairs and cuts of them, RedactPatterns
// gives what every expression run on every text gives.
func TestRedactPatternsEveryFormat(t *testing.T) {
	unfiltered := func(s string) string {
		for _, p := range patterns {
			s = p.redact(s)
		}
		return s
	}
	var texts []string
	for _, p := range patterns {
		s, ok := patternSamples[p.Name]
		if !ok {
			t.Fatalf("no sample of %s", p.Name)
		}
		if got := RedactPatterns(s); !strings.Contains(got, PatternMark(p.Name)) {
			t.Errorf("%s: sample %q redacted to %q", p.Name, s, got)
		}
		texts = append(texts, s, s[:len(s)/2], s[len(s)/3:])
		for _, o := range patternSamples {
			texts = append(texts, s+" "+o, s+o)
		}
	}
	for _, s := range texts {
		if got, want := RedactPatterns(s), unfiltered(s); got != want {
			t.Errorf("%q: %q, every expression gives %q", s, got, want)
		}
	}
}
