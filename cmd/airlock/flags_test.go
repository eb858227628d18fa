package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/sandbox"
)

// clearEnv empties the variables the commands fall back to, so the host's
// environment does not leak into a test.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AIRLOCK_REDIS_URL", "AIRLOCK_QUEUE", "AIRLOCK_CONCURRENCY", "AIRLOCK_INTERACTIVE_RESERVE", "AIRLOCK_POOL_SIZE", "AIRLOCK_RUNTIME", "AIRLOCK_CGROUP_PARENT",
		"AIRLOCK_PYTHON_IMAGE", "AIRLOCK_SHELL_IMAGE", "AIRLOCK_ADDR", "AIRLOCK_KEYS_FILE", "AIRLOCK_CORS_ORIGINS", keys.Env, "AIRLOCK_METRICS_ADDR", "AIRLOCK_METRICS_KEY", "AIRLOCK_DATA_DIR", secretsFileEnv,
		agent.EnvBaseURL, agent.EnvModel, agent.EnvAPIKey, "AIRLOCK_TEST_KEY"} {
		t.Setenv(k, "")
	}
}

// airlock runs the CLI with args and returns its exit code and output.
func airlock(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestBadFlags: an unknown flag or a bad value stops every command before
// it touches Docker or Redis, with exit code 2, a message naming the flag
// and the command's usage.
func TestBadFlags(t *testing.T) {
	clearEnv(t)
	for _, c := range []struct {
		args  []string
		want  []string // all in stderr
		usage string   // the usage text in stderr
	}{
		{[]string{"serve", "--bogus"}, []string{"flag provided but not defined: -bogus"}, "Usage of serve"},
		{[]string{"serve", "--pool", "many"}, []string{`invalid value "many" for flag -pool`}, "Usage of serve"},
		{[]string{"serve", "--max-steps", "x"}, []string{`invalid value "x" for flag -max-steps`}, "Usage of serve"},
		{[]string{"serve", "--insecure-local", "--max-body", "lots"}, []string{"--max-body"}, ""},
		{[]string{"serve", "--insecure-local", "--cgroup-parent", "airlock"}, []string{`invalid value "airlock" for flag -cgroup-parent: cgroup parent "airlock": want an absolute cgroup path`}, "Usage of serve"},
		{[]string{"worker", "--redis", "redis://127.0.0.1:1/0", "--cgroup-parent", "/a/../b"}, []string{`invalid value "/a/../b" for flag -cgroup-parent: cgroup parent "/a/../b"`}, "Usage of worker"},
		{[]string{"worker", "--bogus"}, []string{"-bogus"}, "Usage of worker"},
		{[]string{"worker", "--concurrency", "two"}, []string{`invalid value "two" for flag -concurrency`}, "Usage of worker"},
		{[]string{"worker", "--redis", "redis://127.0.0.1:1/0", "--concurrency", "0"}, []string{"--concurrency must be at least 1"}, ""},
		{[]string{"worker", "--redis", "redis://127.0.0.1:1/0", "--interactive-reserve", "-1"}, []string{"--interactive-reserve must be at least 0"}, ""},
		{[]string{"serve", "--insecure-local", "--interactive-reserve", "-2"}, []string{"--interactive-reserve must be at least 0"}, ""},
		{[]string{"worker", "--interactive-reserve", "one"}, []string{`invalid value "one" for flag -interactive-reserve`}, "Usage of worker"},
		{[]string{"worker", "--grace", "soon"}, []string{`invalid value "soon" for flag -grace`}, "Usage of worker"},
		{[]string{"exec", "--bogus", "run_python", "1"}, []string{"-bogus"}, "Usage of exec"},
		{[]string{"exec", "--timeout", "10", "run_python", "1"}, []string{`invalid value "10" for flag -timeout`}, "Usage of exec"},
		{[]string{"exec", "--cpus", "all", "run_python", "1"}, []string{`invalid value "all" for flag -cpus`}, "Usage of exec"},
		{[]string{"session", "--bogus"}, []string{"-bogus"}, "Usage of session"},
		{[]string{"session", "--memory", "lots"}, []string{`--memory "lots"`}, ""},
		{[]string{"session", "--pids", "-x"}, []string{`invalid value "-x" for flag -pids`}, "Usage of session"},
		{[]string{"run", "--bogus", "goal"}, []string{"-bogus"}, "Usage of run"},
		{[]string{"run", "--max-steps", "ten", "goal"}, []string{`invalid value "ten" for flag -max-steps`}, "Usage of run"},
		{[]string{"run", "--request-timeout", "1", "goal"}, []string{`invalid value "1" for flag -request-timeout`}, "Usage of run"},
		{[]string{"run", "--model", "m", "--base-url", "http://127.0.0.1:1/v1", "--mount", "/nonexistent/x", "goal"}, []string{"--mount /nonexistent/x is not a folder"}, ""},
		{[]string{"run", "goal"}, []string{"no model configured"}, ""},
		{[]string{"run"}, []string{"usage: airlock run"}, ""},
		{[]string{"tools", "list", "--bogus"}, []string{"-bogus"}, "Usage of tools list"},
		{[]string{"tools", "cost", "--rounds", "many"}, []string{`invalid value "many" for flag -rounds`}, "Usage of tools cost"},
		{[]string{"tools", "paint"}, []string{`unknown subcommand "paint"`}, "usage: airlock tools"},
		{[]string{"reap", "--bogus"}, []string{"-bogus"}, "Usage of reap"},
		{[]string{"reap", "--pool", "x"}, []string{`invalid value "x" for flag -pool`}, "Usage of reap"},
		{[]string{"images", "--bogus"}, []string{"flag provided but not defined: --bogus"}, "usage: airlock images"},
		{[]string{"images"}, nil, "usage: airlock images"},
	} {
		code, _, stderr := airlock(c.args...)
		if code != 2 {
			t.Errorf("airlock %v: exit %d, want 2; stderr %q", c.args, code, stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("airlock %v: stderr %q lacks %q", c.args, stderr, w)
			}
		}
		if c.usage != "" && !strings.Contains(stderr, c.usage) {
			t.Errorf("airlock %v: stderr %q lacks the usage %q", c.args, stderr, c.usage)
		}
	}
}

// TestHelp: -h/--help prints the command's usage and exits 0.
func TestHelp(t *testing.T) {
	clearEnv(t)
	for _, c := range []struct {
		args []string
		want string // in stdout or stderr
		flag string // a flag the usage must list ("" for subcommand usages)
	}{
		{[]string{"--help"}, "usage: airlock COMMAND", ""},
		{[]string{"help"}, "usage: airlock COMMAND", ""},
		{[]string{"serve", "--help"}, "Usage of serve", "-redis"},
		{[]string{"serve", "-h"}, "Usage of serve", "-insecure-local"},
		{[]string{"worker", "--help"}, "Usage of worker", "-concurrency"},
		{[]string{"worker", "--help"}, "Usage of worker", "-interactive-reserve"},
		{[]string{"serve", "--help"}, "Usage of serve", "only interactive and session jobs use"},
		{[]string{"exec", "--help"}, "Usage of exec", "-timeout"},
		{[]string{"session", "--help"}, "Usage of session", "-memory"},
		{[]string{"run", "--help"}, "Usage of run", "-base-url"},
		{[]string{"tools", "--help"}, "usage: airlock tools list", ""},
		{[]string{"tools", "list", "--help"}, "Usage of tools list", "-json"},
		{[]string{"tools", "cost", "--help"}, "Usage of tools cost", "-rounds"},
		{[]string{"reap", "--help"}, "Usage of reap", "-pool"},
		{[]string{"images", "--help"}, "usage: airlock images", ""},
	} {
		code, stdout, stderr := airlock(c.args...)
		all := stdout + stderr
		if code != 0 || !strings.Contains(all, c.want) || (c.flag != "" && !strings.Contains(all, c.flag)) {
			t.Errorf("airlock %v: exit %d, output %q; want exit 0 with %q and %q", c.args, code, all, c.want, c.flag)
		}
	}
}

// TestServeFlagsEnv: serve's flags fall back to the environment, and a
// flag given on the command line wins.
func TestServeFlagsEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("AIRLOCK_POOL_SIZE", "7")
	t.Setenv("AIRLOCK_RUNTIME", "runsc")
	t.Setenv("AIRLOCK_CGROUP_PARENT", "/airlock-env")
	t.Setenv("AIRLOCK_PYTHON_IMAGE", "example/python:1")
	t.Setenv("AIRLOCK_REDIS_URL", "redis://127.0.0.1:1/3")
	t.Setenv("AIRLOCK_QUEUE", "q1")
	t.Setenv("AIRLOCK_CONCURRENCY", "3")
	t.Setenv("AIRLOCK_ADDR", "127.0.0.1:9191")
	t.Setenv(agent.EnvBaseURL, "http://127.0.0.1:11434/v1")
	t.Setenv(agent.EnvModel, "env-model")
	t.Setenv(agent.EnvAPIKey, "sk-default")
	t.Setenv("AIRLOCK_TEST_KEY", "sk-chosen")
	var errb bytes.Buffer
	o, code, ok := parseServeFlags([]string{"--insecure-local", "--api-key-env", "AIRLOCK_TEST_KEY"}, envLookup, &errb)
	if !ok {
		t.Fatalf("parse: exit %d: %s", code, errb.String())
	}
	s := o.stack
	if s.pool != 7 || s.runtime != "runsc" || s.python != "example/python:1" || s.shell != "airlock/shell:latest" ||
		s.redis != "redis://127.0.0.1:1/3" || s.queueName != "q1" || s.concurrency != 3 || s.interactiveReserve != 1 {
		t.Errorf("stack flags from env: %+v", s)
	}
	if s.cgroup != "/airlock-env" {
		t.Errorf("AIRLOCK_CGROUP_PARENT: cgroup parent %q", s.cgroup)
	}
	if o, _, ok := parseServeFlags([]string{"--insecure-local", "--cgroup-parent", "airlock.slice"}, envLookup, &errb); !ok || o.stack.cgroup != "airlock.slice" {
		t.Errorf("--cgroup-parent over env: %q", o.stack.cgroup)
	}
	// A bad AIRLOCK_CGROUP_PARENT is refused with the engine's config.
	bad := sandboxFlags{cgroup: "docker"}
	if _, err := bad.engine(nil, nil); err == nil || !strings.Contains(err.Error(), "AIRLOCK_CGROUP_PARENT") {
		t.Errorf("bad AIRLOCK_CGROUP_PARENT: %v", err)
	}
	if o, _, ok := parseServeFlags([]string{"--insecure-local", "--interactive-reserve", "2"}, envLookup, &errb); !ok || o.stack.interactiveReserve != 2 {
		t.Errorf("--interactive-reserve 2: reserve %d", o.stack.interactiveReserve)
	}
	if o.api.Addr != "127.0.0.1:9191" {
		t.Errorf("addr from env: %q", o.api.Addr)
	}
	if p := o.provider; p.BaseURL != "http://127.0.0.1:11434/v1" || p.Model != "env-model" || p.APIKey != "sk-chosen" {
		t.Errorf("provider from env: %+v", p)
	}
	o, _, ok = parseServeFlags([]string{"--insecure-local", "--pool", "0", "--queue", "q2", "--base-url", "http://127.0.0.1:1/v1", "--max-steps", "4"}, envLookup, &errb)
	if !ok || o.stack.pool != 0 || o.stack.queueName != "q2" || o.provider.BaseURL != "http://127.0.0.1:1/v1" || o.maxSteps != 4 || o.provider.APIKey != "sk-default" {
		t.Errorf("flags over env: %+v", o)
	}
	// The embedded state store's directory: AIRLOCK_DATA_DIR, then --data-dir.
	t.Setenv("AIRLOCK_DATA_DIR", "/tmp/airlock-env-data")
	if o, _, ok := parseServeFlags([]string{"--insecure-local"}, envLookup, &errb); !ok || o.dataDir != "/tmp/airlock-env-data" {
		t.Errorf("AIRLOCK_DATA_DIR: data dir %q", o.dataDir)
	}
	if o, _, ok := parseServeFlags([]string{"--insecure-local", "--data-dir", "/tmp/d2"}, envLookup, &errb); !ok || o.dataDir != "/tmp/d2" {
		t.Errorf("--data-dir over env: data dir %q", o.dataDir)
	}
	// A malformed number in the environment falls back to the default.
	t.Setenv("AIRLOCK_POOL_SIZE", "lots")
	if o, _, _ := parseServeFlags([]string{"--insecure-local"}, envLookup, &errb); o.stack.pool != 2 {
		t.Errorf("bad AIRLOCK_POOL_SIZE: pool %d, want the default 2", o.stack.pool)
	}
}

// TestWorkerFlagsEnv: the worker reads the queue settings from the
// environment and requires Redis.
func TestWorkerFlagsEnv(t *testing.T) {
	clearEnv(t)
	var errb bytes.Buffer
	if _, _, code, ok := parseWorkerFlags(nil, &errb); ok || code != 2 || !strings.Contains(errb.String(), "--redis (or AIRLOCK_REDIS_URL) is required") {
		t.Fatalf("no redis: ok %v exit %d: %s", ok, code, errb.String())
	}
	t.Setenv("AIRLOCK_REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv("AIRLOCK_QUEUE", "wq")
	t.Setenv("AIRLOCK_CONCURRENCY", "5")
	t.Setenv("AIRLOCK_POOL_SIZE", "1")
	sf, verbose, _, ok := parseWorkerFlags([]string{"-v", "--grace", "5s"}, &errb)
	if !ok || sf.redis != "redis://127.0.0.1:1/0" || sf.queueName != "wq" || sf.concurrency != 5 || sf.pool != 1 || sf.grace != 5*time.Second || !verbose {
		t.Errorf("worker flags: %+v verbose %v", sf, verbose)
	}
	if sf.interactiveReserve != 1 {
		t.Errorf("default --interactive-reserve %d, want 1", sf.interactiveReserve)
	}
	t.Setenv("AIRLOCK_INTERACTIVE_RESERVE", "3")
	if sf, _, _, ok := parseWorkerFlags(nil, &errb); !ok || sf.interactiveReserve != 3 {
		t.Errorf("AIRLOCK_INTERACTIVE_RESERVE=3: reserve %d", sf.interactiveReserve)
	}
	if sf, _, _, ok := parseWorkerFlags([]string{"--interactive-reserve", "0"}, &errb); !ok || sf.interactiveReserve != 0 {
		t.Errorf("--interactive-reserve 0 over env: reserve %d", sf.interactiveReserve)
	}
}

// TestRunFlagsEnv: `airlock run` takes the model from the environment,
// reads the key from --api-key-env only, and resolves --mount.
func TestRunFlagsEnv(t *testing.T) {
	clearEnv(t)
	env := map[string]string{agent.EnvBaseURL: "http://127.0.0.1:8000/v1", agent.EnvModel: "m1", agent.EnvAPIKey: "sk-default"}
	getenv := func(k string) string { return env[k] }
	var errb bytes.Buffer
	dir := t.TempDir()
	o, code, ok := parseRunFlags([]string{"--mount", dir, "--json", "--max-steps", "3", "--api-key-env", "OTHER_KEY", "count", "files"}, getenv, &errb)
	if !ok {
		t.Fatalf("parse: exit %d: %s", code, errb.String())
	}
	if o.goal != "count files" || o.mount != dir || !o.asJSON || o.maxSteps != 3 {
		t.Errorf("options: %+v", o)
	}
	if o.provider.BaseURL != "http://127.0.0.1:8000/v1" || o.provider.Model != "m1" || o.provider.APIKey != "" {
		t.Errorf("provider: %+v (an explicit --api-key-env must not fall back to %s)", o.provider, agent.EnvAPIKey)
	}
	o, _, ok = parseRunFlags([]string{"--model", "flag-model", "--request-timeout", "90s", "goal"}, getenv, &errb)
	if !ok || o.provider.Model != "flag-model" || o.provider.APIKey != "sk-default" || o.provider.Timeout != 90*time.Second {
		t.Errorf("flags over env: %+v", o.provider)
	}
}

// TestStackFlagsEnv: exec and session embed a worker by default and read
// the same environment.
func TestStackFlagsEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("AIRLOCK_SHELL_IMAGE", "example/shell:2")
	var sf stackFlags
	fs := newTestFlagSet()
	sf.register(fs, true, 0)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if sf.concurrency != 2 || sf.pool != 0 || sf.shell != "example/shell:2" || sf.redis != "" || sf.queueName != "airlock" {
		t.Errorf("embedded defaults: %+v", sf)
	}
	var sf2 stackFlags
	fs = newTestFlagSet()
	sf2.register(fs, false, 2)
	_ = fs.Parse(nil)
	if sf2.concurrency != 0 || sf2.pool != 2 {
		t.Errorf("serve defaults: %+v", sf2)
	}
}

// TestServeMetricsAndLimitFlags: --metrics-addr and --metrics-key (or
// AIRLOCK_METRICS_KEY) reach the API config, a bad address is refused, and
// the API's limit ceiling and maximum are the sandbox's.
func TestServeMetricsAndLimitFlags(t *testing.T) {
	clearEnv(t)
	t.Setenv("AIRLOCK_METRICS_KEY", "mk-from-env-0123456789")
	var errb bytes.Buffer
	o, code, ok := parseServeFlags([]string{"--insecure-local", "--metrics-addr", "127.0.0.1:9393"}, envLookup, &errb)
	if !ok {
		t.Fatalf("parse: exit %d: %s", code, errb.String())
	}
	if o.api.MetricsAddr != "127.0.0.1:9393" || o.api.MetricsKey != "mk-from-env-0123456789" {
		t.Errorf("metrics config: %q %q", o.api.MetricsAddr, o.api.MetricsKey)
	}
	if d := sandbox.DefaultConfig(); o.api.DefaultLimits != d.Defaults || o.api.MaxLimits != d.Max {
		t.Errorf("limits: %+v %+v", o.api.DefaultLimits, o.api.MaxLimits)
	}
	errb.Reset()
	if _, code, ok := parseServeFlags([]string{"--insecure-local", "--metrics-addr", "nope"}, envLookup, &errb); ok || code != 2 || !strings.Contains(errb.String(), "--metrics-addr") {
		t.Errorf("bad --metrics-addr: ok=%v code=%d %s", ok, code, errb.String())
	}
}

// TestQueueReserve: --interactive-reserve N reaches the worker as N slots,
// and 0 as none (the queue reads a zero InteractiveReserve as its default).
func TestQueueReserve(t *testing.T) {
	for n, want := range map[int]int{0: -1, 1: 1, 3: 3} {
		if got := queueReserve(n); got != want {
			t.Errorf("queueReserve(%d) = %d, want %d", n, got, want)
		}
	}
}
