package policy

import (
	"strings"
	"testing"
)

func TestPathRules(t *testing.T) {
	cases := []struct {
		raw, base string
		write     bool
		rule      string // "" means allowed
	}{
		{".env", "/workspace", false, RulePathSecret},
		{"/workspace/config/.env.production", "/workspace", false, RulePathSecret},
		{"/workspace/prod.env", "/workspace", false, RulePathSecret},
		{"/workspace/.ssh/id_rsa", "/workspace", false, RulePathSecret},
		{"id_ed25519.pub", "/workspace", false, RulePathSecret},
		{"certs/server.PEM", "/workspace", false, RulePathSecret},
		{"/proc/self/environ", "/workspace", false, RulePathSecret},
		{"../../etc/shadow", "/workspace", false, RulePathSecret},
		{"/var/run/secrets/kubernetes.io/serviceaccount/token", "/workspace", false, RulePathSecret},
		{"/etc/passwd", "/workspace", false, RulePathReadOutside},
		{"/workspace/a/../../root/x", "/workspace", false, RulePathReadOutside},
		{"/workspacex/a", "/workspace", false, RulePathReadOutside},
		{"data.csv", "/workspace", false, ""},
		{"/work/notes.txt", "/work", false, ""},
		{"key_results.txt", "/workspace", false, ""},
		{"out.txt", "/work", true, ""},
		{"/workspace/data.csv", "/work", true, RulePathWriteOutside},
		{"/work/../tmp/x", "/work", true, RulePathWriteOutside},
		{"x/../../.aws/config", "/work", true, RulePathSecret},
	}
	p := testPolicy()
	for _, c := range cases {
		v := p.Path(c.raw, c.base, c.write)
		switch {
		case c.rule == "" && v != nil:
			t.Errorf("Path(%q, %q, %v) = %s %q, want allowed", c.raw, c.base, c.write, v.Rule, v.Message)
		case c.rule != "" && (v == nil || v.Rule != c.rule):
			t.Errorf("Path(%q, %q, %v) = %+v, want %s", c.raw, c.base, c.write, v, c.rule)
		case v != nil && !strings.Contains(v.Message, quoteShort(c.raw)):
			t.Errorf("message %q does not quote the path", v.Message)
		}
	}
	off := New(Config{WorkDir: "/work", InputDir: "/workspace", DisablePaths: true})
	if v := off.Path(".env", "/workspace", false); v != nil {
		t.Errorf("DisablePaths: .env refused: %+v", v)
	}
	if v := off.Path("/etc/passwd", "/workspace", false); v == nil || v.Rule != RulePathReadOutside {
		t.Errorf("DisablePaths must keep confinement: %+v", v)
	}
}

func TestMultipleStatements(t *testing.T) {
	cases := map[string]bool{
		"select 1":                          false,
		"select 1;":                         false,
		"select 1;  -- done":                false,
		"select 1; /* c */ ":                false,
		"select ';' from t":                 false,
		"select \"a;b\" from t":             false,
		"select 'it''s; fine'":              false,
		"select [x;y] from t":               false,
		"select 1; select 2":                true,
		"select 1;delete from t":            true,
		"select 1; -- c\n drop table t":     true,
		"select 'a'; select 'b'":            true,
		"select 1 /* ; */; attach 'x' as y": true,
	}
	for q, want := range cases {
		if got := SQLMultiple(q); got != want {
			t.Errorf("SQLMultiple(%q) = %v, want %v", q, got, want)
		}
	}
	if v := testPolicy().SQL("select 1; select 2"); v == nil || v.Rule != RuleSQLMultiple {
		t.Errorf("SQL: got %+v", v)
	}
	if v := New(Config{Disabled: []string{RuleSQLMultiple}}).SQL("select 1; select 2"); v != nil {
		t.Errorf("SQL with the rule disabled: got %+v", v)
	}
}

func TestParseMarker(t *testing.T) {
	rule, msg, ok := ParseMarker("noise\n" + policyMarker + RulePathSecret + ": path \".env\" is protected\n")
	if !ok || rule != RulePathSecret || msg != "path \".env\" is protected" {
		t.Fatalf("got %q %q %v", rule, msg, ok)
	}
	if _, _, ok := ParseMarker("AIRLOCK_POLICY has spaces: x"); ok {
		t.Errorf("a rule with blanks must not parse")
	}
}
