package dispatcher

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/secrets"
)

// Redactor removes secrets from text: the values the operator configured
// (replaced by secrets.Mark, which never names them) and the known key and
// token formats of package secrets (replaced by [REDACTED:format]). The
// server's own environment is not a source: it never reaches a sandbox
// (whose env is the image's base plus the call's own), so matching its
// values would only tell a guesser which candidate is a server secret. It
// is immutable and safe for concurrent use.
type Redactor struct {
	literals *secrets.Literals
}

// NewRedactor builds a Redactor for the configured secret values.
func NewRedactor(configured []string) *Redactor {
	return &Redactor{literals: secrets.NewLiterals(configured...)}
}

// String returns s with every secret replaced by its marker.
func (r *Redactor) String(s string) string {
	if s == "" {
		return s
	}
	return secrets.RedactPatterns(r.literals.Replace(s))
}

// Result returns a copy of res with secrets removed from Stdout, Stderr,
// Message, Warnings, Data, the exception, the text parts of display
// bundles and text-like artifacts (whose Size and SHA256 are then
// recomputed). Binary data is left as is.
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
	res.Network = redactNetwork(r, res.Network)
	return r.rich(res)
}

// redactNetwork returns attempts with their hosts and reasons redacted (a
// host name may carry a secret a program put there).
func redactNetwork(r *Redactor, attempts []core.NetworkAttempt) []core.NetworkAttempt {
	if len(attempts) == 0 {
		return attempts
	}
	out := make([]core.NetworkAttempt, len(attempts))
	for i, a := range attempts {
		a.Host, a.Reason = r.String(a.Host), r.String(a.Reason)
		out[i] = a
	}
	return out
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

// hideMount returns res with every mention of the host folder mounted for
// the call replaced by the name the client knows it by ("input folder
// NAME", or "the input folder"), so no host path reaches a client.
func hideMount(res core.Result, hostPath, name string) core.Result {
	hostPath = strings.TrimRight(hostPath, "/")
	if len(hostPath) < 2 {
		return res
	}
	label := "the input folder"
	if name != "" {
		label = "input folder " + name
	}
	rep := func(s string) string {
		if !strings.Contains(s, hostPath) {
			return s
		}
		return strings.ReplaceAll(s, hostPath, label)
	}
	res.Stdout, res.Stderr, res.Message = rep(res.Stdout), rep(res.Stderr), rep(res.Message)
	if len(res.Warnings) > 0 {
		ws := make([]string, len(res.Warnings))
		for i, w := range res.Warnings {
			ws[i] = rep(w)
		}
		res.Warnings = ws
	}
	return res
}

// ownerRedactors hands out the Redactor of an owner's results: the
// server-wide secrets (Config.Secrets) plus those of the owner's key
// (Config.KeySecrets), built once per owner that has any. A key's secrets
// are matched in its own results only, so no other tenant can probe them.
type ownerRedactors struct {
	server  []string
	base    *Redactor // the server-wide secrets only
	keyed   func(owner string) []string
	mu      sync.Mutex
	byOwner map[string]*Redactor
}

// newOwnerRedactors returns the redactors for the server-wide secrets and
// the per-key lookup keyed (nil: no key has secrets).
func newOwnerRedactors(server []string, keyed func(owner string) []string) *ownerRedactors {
	return &ownerRedactors{server: server, base: NewRedactor(server), keyed: keyed, byOwner: map[string]*Redactor{}}
}

// forOwner returns the Redactor of owner's results.
func (o *ownerRedactors) forOwner(owner string) *Redactor {
	if o.keyed == nil || owner == "" {
		return o.base
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if r, ok := o.byOwner[owner]; ok {
		return r
	}
	r := o.base
	if own := o.keyed(owner); len(own) > 0 {
		r = NewRedactor(append(append([]string(nil), o.server...), own...))
	}
	o.byOwner[owner] = r
	return r
}
