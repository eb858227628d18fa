package agent

import "strings"

// redactedMark replaces secrets in events, logs and tool arguments.
const redactedMark = "[REDACTED]"

// redactor hides the provider's API key (and any extra secrets) in text
// that leaves the loop: events, log lines, error messages and tool call
// arguments.
type redactor struct {
	secrets []string
}

// newRedactor returns a redactor for the non-empty secrets. Very short
// values are ignored: replacing them would mangle ordinary text.
func newRedactor(secrets ...string) *redactor {
	r := &redactor{}
	for _, s := range secrets {
		if len(s) >= 6 {
			r.secrets = append(r.secrets, s)
		}
	}
	return r
}

// String returns s with every secret replaced.
func (r *redactor) String(s string) string {
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, redactedMark)
		}
	}
	return s
}

// Bytes returns b with every secret replaced.
func (r *redactor) Bytes(b []byte) []byte {
	for _, sec := range r.secrets {
		if strings.Contains(string(b), sec) {
			b = []byte(strings.ReplaceAll(string(b), sec, redactedMark))
		}
	}
	return b
}
