package secrets

import (
	"regexp"
	"strings"
)

// Mark replaces a configured secret. It never names the secret or where it
// came from, so a redacted answer does not tell a guesser which name a
// matching candidate belongs to.
const Mark = "[REDACTED]"

// PatternMark is the marker of a value found by pattern name, e.g.
// "[REDACTED:github_token]". It names only the format, never a variable.
func PatternMark(name string) string { return "[REDACTED:" + name + "]" }

// nameWords mark a variable name as secret-looking (matched
// case-insensitively as substrings).
var nameWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "AUTH", "SESSION", "COOKIE"}

// NameWords returns the words that mark a variable name as secret-looking,
// upper case. The slice is a copy.
func NameWords() []string { return append([]string(nil), nameWords...) }

// LooksSecret reports whether an environment variable name contains one of
// NameWords (case-insensitive).
func LooksSecret(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range nameWords {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// Pattern is one known key or token format.
type Pattern struct {
	// Name is the format's name, shown in PatternMark.
	Name string
	// Re matches the secret (or, with Group, its labelled context).
	Re *regexp.Regexp
	// Group, when > 0, is the submatch to redact (the value after a label).
	Group int
	// needles: every match contains one of them (case-sensitive), so
	// text holding none is not searched; nil: always searched.
	needles []string
}

// patterns are compiled once; they are never modified.
var patterns = []Pattern{
	{Name: "private_key", Re: regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z)`),
		needles: []string{"-----BEGIN"}},
	{Name: "openai_key", Re: regexp.MustCompile(`\bsk-(?:proj-|svcacct-|admin-|ant-[a-z0-9]+-)?[A-Za-z0-9_-]{20,}`), needles: []string{"sk-"}},
	{Name: "aws_access_key", Re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[0-9A-Z]{16}\b`),
		needles: []string{"AKIA", "ASIA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "ABIA", "ACCA"}},
	{Name: "aws_secret_key", Re: regexp.MustCompile(`(?i)aws_?secret_?access_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{30,})`), Group: 1},
	{Name: "github_token", Re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`), needles: []string{"gh", "github_pat_"}},
	{Name: "slack_token", Re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), needles: []string{"xox"}},
	{Name: "google_api_key", Re: regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`), needles: []string{"AIza"}},
	{Name: "stripe_key", Re: regexp.MustCompile(`\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}`), needles: []string{"_live_", "_test_"}},
	{Name: "jwt", Re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), needles: []string{"eyJ"}},
	{Name: "bearer_token", Re: regexp.MustCompile(`(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)`), Group: 1},
}

// Patterns returns the known secret formats. The slice is a copy; the
// compiled expressions are shared and safe for concurrent use.
func Patterns() []Pattern { return append([]Pattern(nil), patterns...) }

// RedactPatterns returns s with every match of a known format replaced by
// its PatternMark.
func RedactPatterns(s string) string {
	for _, p := range patterns {
		if p.needles == nil || containsAny(s, p.needles) {
			s = p.redact(s)
		}
	}
	return s
}

// redact replaces p's matches in s (with Group, only that submatch) by
// its PatternMark.
func (p Pattern) redact(s string) string {
	if p.Group == 0 {
		return p.Re.ReplaceAllLiteralString(s, PatternMark(p.Name))
	}
	return replaceGroup(p.Re, s, p.Group, PatternMark(p.Name))
}

// containsAny reports whether s contains one of subs.
func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
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

// MinLiteralLen is the shortest configured secret value that is redacted
// verbatim; shorter values (e.g. "1") would destroy ordinary output.
const MinLiteralLen = 6

// Literals replaces configured secret values by Mark.
type Literals struct {
	values []string // longest first, so a secret containing another goes whole
}

// NewLiterals returns a replacer for the distinct values of at least
// MinLiteralLen bytes.
func NewLiterals(values ...string) *Literals {
	l := &Literals{}
	seen := map[string]bool{}
	for _, v := range values {
		if len(v) >= MinLiteralLen && !seen[v] {
			seen[v] = true
			l.values = append(l.values, v)
		}
	}
	for i := 1; i < len(l.values); i++ { // insertion sort, longest first; lists are short
		for j := i; j > 0 && len(l.values[j]) > len(l.values[j-1]); j-- {
			l.values[j], l.values[j-1] = l.values[j-1], l.values[j]
		}
	}
	return l
}

// Replace returns s with every configured value replaced by Mark.
func (l *Literals) Replace(s string) string {
	if l == nil {
		return s
	}
	for _, v := range l.values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mark)
		}
	}
	return s
}
