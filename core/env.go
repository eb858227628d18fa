package core

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Bounds of a call's own environment variables (Request.Env) and standard
// input (Request.Stdin), the same at every door: the tool schemas, the
// dispatcher and the sandbox.
const (
	MaxEnvVars       = 64       // variables per call
	MaxEnvNameBytes  = 128      // one name
	MaxEnvValueBytes = 32 << 10 // one value
	MaxEnvBytes      = 64 << 10 // every name and value together
	MaxStdinBytes    = 1 << 20  // the call's standard input
)

// EnvNamePattern is what a variable name of Request.Env must match:
// capital letters, digits and '_', not starting with a digit.
const EnvNamePattern = `^[A-Z_][A-Z0-9_]*$`

var envNameRE = regexp.MustCompile(EnvNamePattern)

// reservedEnv are the names the sandbox sets itself; a call may not
// replace them (a trailing '*' is a prefix).
var reservedEnv = []string{"AIRLOCK_*", "PATH", "HOME", "PYTHON*", "LD_*"}

// ReservedEnv returns the refused names and prefixes ("LD_*"), for
// messages and documentation.
func ReservedEnv() []string { return append([]string(nil), reservedEnv...) }

// envReserved returns the reserved name or prefix that name falls under.
func envReserved(name string) (string, bool) {
	for _, r := range reservedEnv {
		if p, ok := strings.CutSuffix(r, "*"); ok && strings.HasPrefix(name, p) || r == name {
			return r, true
		}
	}
	return "", false
}

// CheckEnv checks a call's environment variables: names match
// EnvNamePattern and are not reserved (AIRLOCK_*, PATH, HOME, PYTHON*,
// LD_*), values hold no NUL byte, and the counts and sizes stay within
// MaxEnvVars, MaxEnvNameBytes, MaxEnvValueBytes and MaxEnvBytes. The error
// (an ErrInvalid) names every refused variable; values are never quoted.
func CheckEnv(env map[string]string) error {
	if len(env) > MaxEnvVars {
		return Errorf("env", ErrInvalid, fmt.Sprintf("env has %d variables; at most %d are allowed", len(env), MaxEnvVars))
	}
	var errs []string
	total := 0
	for k, v := range env {
		total += len(k) + len(v)
		switch r, reserved := envReserved(k); {
		case len(k) > MaxEnvNameBytes:
			errs = append(errs, fmt.Sprintf("env %.32s...: the name is longer than %d bytes", k, MaxEnvNameBytes))
		case !envNameRE.MatchString(k):
			errs = append(errs, fmt.Sprintf("env %q: not a valid variable name (capital letters, digits and _, not starting with a digit)", k))
		case reserved:
			errs = append(errs, fmt.Sprintf("env %s: refused, the sandbox sets %s itself (reserved: %s)", k, r, strings.Join(reservedEnv, ", ")))
		case strings.ContainsRune(v, 0):
			errs = append(errs, fmt.Sprintf("env %s: the value contains a NUL byte", k))
		case len(v) > MaxEnvValueBytes:
			errs = append(errs, fmt.Sprintf("env %s: the value is %d bytes; at most %d are allowed", k, len(v), MaxEnvValueBytes))
		}
	}
	if total > MaxEnvBytes {
		errs = append(errs, fmt.Sprintf("env holds %d bytes of names and values; at most %d are allowed", total, MaxEnvBytes))
	}
	if len(errs) == 0 {
		return nil
	}
	sort.Strings(errs)
	return Errorf("env", ErrInvalid, strings.Join(errs, "; "))
}
