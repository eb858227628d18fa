package agent

import "github.com/airlock-dev/airlock/internal/secrets"

// redactedMark replaces secrets in events, logs and tool arguments. It
// never names the secret (see package secrets).
const redactedMark = secrets.Mark

// redactor hides the provider's API key (and any extra secrets) in text
// that leaves the loop: events, log lines, error messages and tool call
// arguments. Tool results were already redacted by the dispatcher, with
// the same secret list (package secrets).
type redactor struct {
	lit *secrets.Literals
}

// newRedactor returns a redactor for the non-empty secrets. Values shorter
// than secrets.MinLiteralLen are ignored: replacing them would mangle
// ordinary text.
func newRedactor(values ...string) *redactor {
	return &redactor{lit: secrets.NewLiterals(values...)}
}

// String returns s with every secret replaced.
func (r *redactor) String(s string) string { return r.lit.Replace(s) }

// Bytes returns b with every secret replaced.
func (r *redactor) Bytes(b []byte) []byte {
	s := string(b)
	if out := r.lit.Replace(s); out != s {
		return []byte(out)
	}
	return b
}
