package main

import (
	"bytes"
	"context"
	"github.com/airlock-dev/airlock/internal/testscale"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/sandbox"
)

// secretsFile writes a secrets file holding values and returns its path.
func secretsFile(t *testing.T, values ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secrets")
	if err := os.WriteFile(p, []byte(strings.Join(values, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSecretsFileFlag: --secrets-file (or AIRLOCK_SECRETS_FILE) is read by
// serve, worker and exec; a bad file stops the command with exit 2 naming
// the flag and never the values; exec cannot send one to --server.
func TestSecretsFileFlag(t *testing.T) {
	clearEnv(t)
	good := secretsFile(t, "db-password-0123", "api-token-4567")
	var errb bytes.Buffer
	o, code, ok := parseServeFlags([]string{"--insecure-local", "--secrets-file", good}, envLookup, &errb)
	if !ok || o.stack.secrets.Len() != 2 {
		t.Fatalf("serve --secrets-file: exit %d %v %s", code, o.stack.secrets, errb.String())
	}
	t.Setenv(secretsFileEnv, good)
	if o, _, ok := parseServeFlags([]string{"--insecure-local"}, envLookup, &errb); !ok || o.stack.secrets.Len() != 2 {
		t.Errorf("serve with %s: %v", secretsFileEnv, o.stack.secrets)
	}
	t.Setenv("AIRLOCK_REDIS_URL", "redis://127.0.0.1:1/0")
	if sf, _, _, ok := parseWorkerFlags(nil, &errb); !ok || sf.secrets.Len() != 2 {
		t.Errorf("worker with %s: %v", secretsFileEnv, sf.secrets)
	}
	t.Setenv(secretsFileEnv, "")
	t.Setenv("AIRLOCK_REDIS_URL", "")
	bad := secretsFile(t, "long-enough-value", "pin")
	for _, args := range [][]string{
		{"serve", "--insecure-local", "--secrets-file", bad},
		{"worker", "--redis", "redis://127.0.0.1:1/0", "--secrets-file", bad},
		{"exec", "--secrets-file", bad, "run_python", "1"},
		{"exec", "--secrets-file", filepath.Join(t.TempDir(), "missing"), "run_python", "1"},
		{"exec", "--server", "http://127.0.0.1:1", "--secrets-file", good, "run_python", "1"},
	} {
		code, _, stderr := airlock(args...)
		if code != 2 || !strings.Contains(stderr, "--secrets-file") || strings.Contains(stderr, "long-enough-value") || strings.Contains(stderr, "db-password") {
			t.Errorf("airlock %v: exit %d, stderr %q", args, code, stderr)
		}
	}
	for _, c := range []string{"serve", "worker", "exec"} {
		if _, stdout, stderr := airlock(c, "--help"); !strings.Contains(stdout+stderr, "-secrets-file") {
			t.Errorf("%s --help lacks --secrets-file", c)
		}
	}
}

// TestWorkerRedactsSecrets: a worker with --secrets-file redacts its
// results and live output before they reach the queue; it builds no
// dispatcher.
func TestWorkerRedactsSecrets(t *testing.T) {
	const secret = "worker-secret-value-42"
	eng := &fakeEngine{}
	f := &stackFlags{queueName: "w", concurrency: 1, secretsFile: secretsFile(t, secret)}
	if err := f.loadSecrets(); err != nil {
		t.Fatal(err)
	}
	st, err := buildWorkerWith(context.Background(), f, slog.New(slog.DiscardHandler), func(*slog.Logger, prometheus.Registerer) (stackEngine, error) { return eng, nil })
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if st.disp != nil || st.client != nil || st.agentApr != nil {
		t.Errorf("a worker stack with a dispatcher, a client or approvals: %+v", st)
	}
	c := jobs.NewClient(st.queue, jobs.ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	var live []core.Event
	res, err := c.Exec(core.WithSink(ctx, func(ev core.Event) { live = append(live, ev) }), core.Request{Op: core.OpExec, Owner: "o", Language: core.Python, Code: "print('" + secret + "')"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Stdout, secret) || !strings.Contains(res.Stdout, "[REDACTED]") {
		t.Errorf("worker result: %q", res.Stdout)
	}
	if len(live) == 0 || strings.Contains(live[0].Text, secret) || !strings.Contains(live[0].Text, "[REDACTED]") {
		t.Errorf("live output: %+v", live)
	}
}

// TestCallCeiling: serve's calls are bounded by the server defaults (the
// keys raise them per key), a local command's by the server maximum: an
// operator's `exec --timeout 20s` gets 20 s (it was silently 10 s).
func TestCallCeiling(t *testing.T) {
	d := sandbox.DefaultConfig()
	for _, c := range []struct {
		local bool
		want  core.Limits
	}{{false, d.Defaults}, {true, d.Max}} {
		eng := &fakeEngine{}
		f := &stackFlags{queueName: "c", local: c.local}
		st, err := buildStackWith(context.Background(), f, slog.New(slog.DiscardHandler), func(*slog.Logger, prometheus.Registerer) (stackEngine, error) { return eng, nil })
		if err != nil {
			t.Fatal(err)
		}
		if got := st.disp.Config().Ceiling; got != c.want {
			t.Errorf("local %v: ceiling %+v", c.local, got)
		}
		r := runCall(t, st, dispatcher.ToolExecuteShell, map[string]any{"command": "true", "timeout_seconds": 20})
		reqs, _, _ := eng.state()
		if c.local && (r.Status != dispatcher.StatusOK || len(reqs) != 1 || reqs[0].Limits.Timeout != 20*time.Second) {
			t.Errorf("local 20 s: %s %s", r.Status, r.Content)
		}
		if !c.local && (r.Status != dispatcher.StatusRejected || r.Code != core.ErrInvalid) {
			t.Errorf("serve 20 s: %s %s", r.Status, r.Content)
		}
		st.close()
	}
}

// TestInsecureLocalCeiling: serve --insecure-local has no keys, so its
// user is the operator: its calls may use up to the server maximum, as in
// exec; with keys the server defaults bound them.
func TestInsecureLocalCeiling(t *testing.T) {
	clearEnv(t)
	var errb bytes.Buffer
	o, _, ok := parseServeFlags([]string{"--insecure-local"}, envLookup, &errb)
	if !ok || !o.stack.local || o.stack.ceiling() != sandbox.DefaultConfig().Max {
		t.Errorf("--insecure-local: local %v ceiling %+v", o.stack.local, o.stack.ceiling())
	}
	t.Setenv("AIRLOCK_API_KEYS", "a-key-0123456789abcdef")
	o, _, ok = parseServeFlags(nil, envLookup, &errb)
	if !ok || o.stack.local || o.stack.ceiling() != sandbox.DefaultConfig().Defaults {
		t.Errorf("with keys: local %v ceiling %+v (%s)", o.stack.local, o.stack.ceiling(), errb.String())
	}
}
