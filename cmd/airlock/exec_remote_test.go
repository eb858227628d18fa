package main

import (
	"bytes"
	"context"
	"github.com/airlock-dev/airlock/internal/testscale"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/api"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/sandbox"
)

// TestExecRemote runs `airlock exec --server URL --key K` against an
// api.Server on a real stack (Docker sandbox, in-process queue and worker)
// and checks output and exit codes as the local mode has them.
func TestExecRemote(t *testing.T) {
	requireSandbox(t)
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(5*time.Minute))
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	sf := stackFlags{concurrency: 1}
	sf.python, sf.shell = envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"), envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest")
	st, err := buildStack(ctx, &sf, log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	const key = "remote-exec-key-0123456789"
	ks, err := keys.New("cli:" + key)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.Config{Keys: ks}, api.Deps{Dispatcher: apiDispatcher{st.disp}, Sessions: apiSessions{Client: st.client}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	for _, c := range []struct {
		args        []string
		stdin       string
		code        int
		out, errOut string
	}{
		{[]string{"run_python", "print(6*7)"}, "", 0, "42\n", ""},
		{[]string{"run_python"}, "import sys\nprint('from stdin')\nsys.exit(3)", 3, "from stdin\n", ""},
		{[]string{"execute_shell", "echo oops >&2; exit 5"}, "", 5, "", "oops\n"},
		{[]string{"--timeout", "1s", "run_python", "import time\ntime.sleep(30)"}, "", 124, "", "airlock: timeout"},
		{[]string{"execute_shell", "rm -rf /"}, "", 126, "", "airlock: rejected"},
		{[]string{"--json", "run_python", "print(1)"}, "", 0, `"status": "ok"`, ""},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"exec", "--server", hs.URL, "--key", key}, c.args...)
		code := run(args, strings.NewReader(c.stdin), &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.errOut) {
			t.Errorf("airlock %v: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", c.args, code, out.String(), errb.String(), c.code, c.out, c.errOut)
		}
	}
	// Platform errors: a wrong key, a host folder.
	var out, errb bytes.Buffer
	if code := run([]string{"exec", "--server", hs.URL, "--key", "wrong-key-0000000000", "run_python", "1"}, strings.NewReader(""), &out, &errb); code != 1 || !strings.Contains(errb.String(), "401 unauthorized") {
		t.Errorf("wrong key: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := run([]string{"exec", "--server", hs.URL, "--mount", ".", "run_python", "1"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "--mount") {
		t.Errorf("--mount: exit %d, stderr %q", code, errb.String())
	}
}

// requireSandbox skips the test without Docker and the sandbox images,
// except in CI (CI=true), where it fails.
func requireSandbox(t *testing.T) {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") == "true" {
		fail = t.Fatalf
	}
	dc, err := sandbox.NewDockerClient()
	if err != nil {
		fail("no Docker client: %v", err)
		return
	}
	defer dc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(30*time.Second))
	defer cancel()
	for _, img := range []string{envOr("AIRLOCK_PYTHON_IMAGE", "airlock/python:latest"), envOr("AIRLOCK_SHELL_IMAGE", "airlock/shell:latest")} {
		if _, err := dc.ImageInspect(ctx, img); err != nil {
			fail("sandbox image %s is not built (run `make images`): %v", img, err)
			return
		}
	}
}
