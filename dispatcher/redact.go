package dispatcher

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
)

// secretPattern is one known key or token format.
type secretPattern struct {
	name string
	re   *regexp.Regexp
	// group, when > 0, redacts only that submatch (the value after a label).
	group int
}

// secretPatterns are the known formats; each match becomes [REDACTED:name].
var secretPatterns = []secretPattern{
	{name: "private_key", re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`)},
	{name: "openai_key", re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{20,}`)},
	{name: "aws_access_key", re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[0-9A-Z]{16}\b`)},
	{name: "aws_secret_key", re: regexp.MustCompile(`(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{30,})`), group: 1},
	{name: "github_token", re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`)},
	{name: "slack_token", re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{name: "google_api_key", re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{name: "stripe_key", re: regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}`)},
	{name: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{name: "bearer_token", re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)`), group: 1},
}

// secretEnvWords mark an environment variable name as secret-looking.
var secretEnvWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "PASS"}

// minSecretLen is the shortest literal secret value redacted; shorter
// values (e.g. PASSWORD=1) would destroy ordinary output and are skipped.
const minSecretLen = 6

// literalSecret is a value to redact verbatim.
type literalSecret struct {
	value, label string
}

// Redactor removes secrets from text. It is immutable and safe for
// concurrent use.
type Redactor struct {
	literals []literalSecret
}

// NewRedactor builds a Redactor for the configured secrets and, unless
// skipEnv, the values of secret-looking variables in environ (KEY=VALUE).
func NewRedactor(secrets []string, environ []string, skipEnv bool) *Redactor {
	r := &Redactor{}
	seen := map[string]bool{}
	addLit := func(v, label string) {
		if len(v) < minSecretLen || seen[v] {
			return
		}
		seen[v] = true
		r.literals = append(r.literals, literalSecret{value: v, label: label})
	}
	for _, s := range secrets {
		addLit(s, "secret")
	}
	if !skipEnv {
		for _, kv := range environ {
			name, val, ok := strings.Cut(kv, "=")
			if ok && secretEnvName(name) {
				addLit(val, "env:"+name)
			}
		}
	}
	// longest first, so a secret containing another is replaced whole
	sort.SliceStable(r.literals, func(i, j int) bool { return len(r.literals[i].value) > len(r.literals[j].value) })
	return r
}

// secretEnvName reports a name containing KEY, TOKEN, SECRET, PASSWORD,
// CREDENTIAL or PASS (case-insensitive).
func secretEnvName(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range secretEnvWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// String returns s with every secret replaced by [REDACTED:kind].
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	for _, l := range r.literals {
		if strings.Contains(s, l.value) {
			s = strings.ReplaceAll(s, l.value, "[REDACTED:"+l.label+"]")
		}
	}
	for _, p := range secretPatterns {
		if p.group == 0 {
			s = p.re.ReplaceAllLiteralString(s, "[REDACTED:"+p.name+"]")
			continue
		}
		s = replaceGroup(p.re, s, p.group, "[REDACTED:"+p.name+"]")
	}
	return s
}

// replaceGroup replaces only submatch g of every match of re in s.
func replaceGroup(re *regexp.Regexp, s string, g int, repl string) string {
	idx := re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var sb strings.Builder
	last := 0
	for _, m := range idx {
		a, b := m[2*g], m[2*g+1]
		if a < 0 {
			continue
		}
		sb.WriteString(s[last:a])
		sb.WriteString(repl)
		last = b
	}
	sb.WriteString(s[last:])
	return sb.String()
}

// Result returns a copy of res with secrets removed from Stdout, Stderr,
// Message, Warnings, Data and text-like artifacts (whose Size and SHA256
// are then recomputed). Binary data is left as is.
func (r *Redactor) Result(res core.Result) core.Result {
	res.Stdout = r.String(res.Stdout)
	res.Stderr = r.String(res.Stderr)
	res.Message = r.String(res.Message)
	if len(res.Warnings) > 0 {
		ws := make([]string, len(res.Warnings))
		for i, w := range res.Warnings {
			ws[i] = r.String(w)
		}
		res.Warnings = ws
	}
	if isText("", res.Data) {
		res.Data = []byte(r.String(string(res.Data)))
	}
	if len(res.Artifacts) > 0 {
		arts := make([]core.Artifact, len(res.Artifacts))
		for i, a := range res.Artifacts {
			a.Name = r.String(a.Name)
			if len(a.Data) > 0 && isText(a.MIME, a.Data) {
				red := []byte(r.String(string(a.Data)))
				if !bytes.Equal(red, a.Data) {
					sum := sha256.Sum256(red)
					a.Data, a.Size, a.SHA256 = red, int64(len(red)), hex.EncodeToString(sum[:])
				}
			}
			arts[i] = a
		}
		res.Artifacts = arts
	}
	return res
}

// isText reports text-like data: a text MIME type, or valid UTF-8 without NUL.
func isText(mime string, data []byte) bool {
	if len(data) == 0 {
		return false
	}
	m := strings.ToLower(mime)
	if strings.HasPrefix(m, "text/") || strings.Contains(m, "json") || strings.Contains(m, "xml") ||
		strings.Contains(m, "csv") || strings.Contains(m, "yaml") || strings.Contains(m, "javascript") {
		return true
	}
	if strings.HasPrefix(m, "image/") && !strings.Contains(m, "svg") {
		return false
	}
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}
