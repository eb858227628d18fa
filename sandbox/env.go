package sandbox

import (
	"fmt"
	"regexp"
	"slices"
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

// checkEnv refuses names that are malformed, not allowed, or secret-looking
// without explicit permission.
func checkEnv(env map[string]string, allow, secretAllow []string) error {
	var errs []string
	for k, v := range env {
		switch {
		case !envName.MatchString(k):
			errs = append(errs, fmt.Sprintf("env %q: not a valid variable name", k))
		case strings.ContainsRune(v, 0):
			errs = append(errs, fmt.Sprintf("env %s: value contains a NUL byte", k))
		case LooksSecret(k) && !slices.Contains(secretAllow, k):
			errs = append(errs, fmt.Sprintf("env %s: looks like a secret and is not in the server's secret allowlist", k))
		case !LooksSecret(k) && !slices.Contains(allow, k):
			errs = append(errs, fmt.Sprintf("env %s: not in the server's allowlist %v", k, allow))
		}
	}
	sort.Strings(errs)
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
