package dispatcher

import (
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/internal/approvals"
)

// Config holds every tunable of a Dispatcher. Start from DefaultConfig and
// change what you need; zero values are replaced by the defaults in New.
type Config struct {
	// MaxContentChars is the budget, in characters (runes), of a Result's
	// Content; longer content keeps its head and tail around a marker.
	MaxContentChars int
	// MaxContentBytes caps Content in bytes as well (UTF-8), whatever the
	// character count.
	MaxContentBytes int
	// MaxArgumentBytes refuses calls whose raw arguments are larger.
	MaxArgumentBytes int

	// MaxTimeout is the largest timeout_seconds the schemas accept (the
	// sandbox maximum). A call's own bound is lower: its ceiling (Ceiling,
	// or Call.Ceiling from the key's policy). A call that names no timeout
	// gets the sandbox's: the server default for a one-shot call, the
	// session's own limit for a session call.
	MaxTimeout time.Duration

	// WorkDir is the session's writable work folder inside the sandbox.
	WorkDir string
	// InputDir is where the caller's inputs are mounted read-only.
	InputDir string

	// Policy configures the defence-in-depth rules.
	Policy PolicyConfig

	// DisabledTools are left out of the built-in registry.
	DisabledTools []string
	// ApprovalTools are tools whose every call waits for Approve/Reject.
	ApprovalTools []string
	// ApprovalTTL is how long a pending approval stays valid.
	ApprovalTTL time.Duration
	// Approvals stores pending approvals (internal/approvals: Memory or
	// Redis); nil means a new in-memory store on the Now clock.
	Approvals approvals.Store

	// Ceiling is the most a call's Limits may ask for (normally the
	// sandbox defaults): a call may only lower it, unless the transport sets
	// Call.Ceiling from the caller's policy. Zero fields are not capped.
	Ceiling core.Limits

	// Secrets are literal values to redact from everything returned to
	// anyone, each replaced by "[REDACTED]" (never by a name). The server's
	// own environment is not read: it never reaches a sandbox.
	Secrets []string
	// KeySecrets, when set, returns the secrets of owner's key (the keys
	// file's secrets_file), redacted like Secrets but from that owner's
	// results only. It is asked once per owner.
	KeySecrets func(owner string) []string
	// Egress, when set, returns a call's network policy (issue 29): its
	// owner's key's egress narrowed by the call's environment
	// (keys.EgressFor). The dispatcher puts it in Call.Egress before the
	// tool prepares the call; nil means no call has network. An error
	// refuses the call (bad input: a bad environment egress list).
	Egress func(call Call) (egress.Policy, error)
	// Fetcher, when set, makes the fetch_url tool (builtin_fetch.go): it
	// fetches in Airlock through the call's Egress.
	Fetcher *egress.Fetcher

	// Environments resolves the environment a call names to the image it
	// runs in (environments.Resolver); nil knows the built-in ones only.
	Environments EnvironmentResolver

	// Now is the clock; nil means time.Now. Tests set it.
	Now func() time.Time
}

// PolicyConfig switches the policy rule families and single rules. The
// zero value enables everything: rules are on unless switched off.
type PolicyConfig struct {
	// DisableShell turns off the shell.* rules on execute_shell.
	DisableShell bool
	// DisablePython turns off the python.* rules on run_python (and on
	// `python -c` inside shell commands), for operators who consider the
	// container boundary enough.
	DisablePython bool
	// DisablePaths turns off the path.* secret-file rules. Confinement of
	// writes to the work folder is part of the file tools and stays on.
	DisablePaths bool
	// Disabled names single rules to switch off (e.g. "shell.privilege").
	Disabled []string
	// RequireApproval names rules that, instead of refusing, hold the call
	// for Approve/Reject.
	RequireApproval []string
}

// DefaultConfig returns the production defaults: every policy rule on,
// 4000-character / 16 KiB content, a 300 s schema maximum for
// timeout_seconds (no default: the sandbox's applies), /work and
// /workspace.
func DefaultConfig() Config {
	return Config{
		MaxContentChars:  4000,
		MaxContentBytes:  16 << 10,
		MaxArgumentBytes: 256 << 10,
		MaxTimeout:       300 * time.Second,
		WorkDir:          "/work",
		InputDir:         "/workspace",
		ApprovalTTL:      15 * time.Minute,
	}
}

// withDefaults fills zero numeric and path fields from DefaultConfig.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.MaxContentChars <= 0 {
		c.MaxContentChars = d.MaxContentChars
	}
	if c.MaxContentBytes <= 0 {
		c.MaxContentBytes = d.MaxContentBytes
	}
	if c.MaxArgumentBytes <= 0 {
		c.MaxArgumentBytes = d.MaxArgumentBytes
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = d.MaxTimeout
	}
	if c.WorkDir == "" {
		c.WorkDir = d.WorkDir
	}
	if c.InputDir == "" {
		c.InputDir = d.InputDir
	}
	if c.ApprovalTTL <= 0 {
		c.ApprovalTTL = d.ApprovalTTL
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}
