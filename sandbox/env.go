package sandbox

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/airlock-dev/airlock/internal/secrets"
)

var envName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)

// LooksSecret reports whether an environment variable name suggests a
// secret; the word list is internal/secrets', shared with the redactors.
func LooksSecret(name string) bool { return secrets.LooksSecret(name) }

// baseEnv is what every container starts with; nothing comes from the host.
func baseEnv(extra map[string]string) []string {
	env := map[string]string{
		"PATH":                    "/usr/local/bin:/usr/bin:/bin",
		"HOME":                    "/tmp",
		"LANG":                    "C.UTF-8",
		"MPLBACKEND":              "Agg",
		"MPLCONFIGDIR":            "/tmp/.mpl",
		"PYTHONDONTWRITEBYTECODE": "1",
		"PYTHONUNBUFFERED":        "1",
	}
	for k, v := range extra {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// MaxEnvBytes bounds a request's env: the names and values together.
const MaxEnvBytes = 64 << 10

// reservedEnv reports why a request may not set name ("" when it may): these
// variables steer the sandbox and its interpreters themselves.
func reservedEnv(name string) string {
	switch {
	case strings.HasPrefix(name, "AIRLOCK_"):
		return "AIRLOCK_* variables are the sandbox's own"
	case name == "PATH" || name == "HOME":
		return "the sandbox sets " + name + " itself"
	case strings.HasPrefix(name, "PYTHON"):
		return "PYTHON* variables change how the interpreter starts"
	case strings.HasPrefix(name, "LD_"):
		return "LD_* variables change how every program loads"
	}
	return ""
}

// checkEnv refuses a request env that is malformed, reserved or too large,
// naming each variable at fault.
func checkEnv(env map[string]string) error {
	var errs []string
	size := 0
	for k, v := range env {
		size += len(k) + len(v)
		switch {
		case !envName.MatchString(k):
			errs = append(errs, fmt.Sprintf("env %q: not a valid variable name (A-Z, 0-9, _)", k))
		case reservedEnv(k) != "":
			errs = append(errs, fmt.Sprintf("env %s: may not be set (%s)", k, reservedEnv(k)))
		case strings.ContainsRune(v, 0):
			errs = append(errs, fmt.Sprintf("env %s: value contains a NUL byte", k))
		}
	}
	sort.Strings(errs)
	if size > MaxEnvBytes {
		errs = append(errs, fmt.Sprintf("env is %d bytes (names and values), over the %d-byte limit", size, MaxEnvBytes))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
