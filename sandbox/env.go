package sandbox

import (
	"sort"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/secrets"
)

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

// checkEnv refuses what core.CheckEnv refuses: a call's env is its own
// (any name but those the sandbox sets itself: AIRLOCK_*, PATH, HOME,
// PYTHON*, LD_*), bounded in count and size. Nothing comes from the host.
func checkEnv(env map[string]string) error { return core.CheckEnv(env) }
