package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: airlock COMMAND"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"exec"}, 2, "usage: airlock exec"},
		{[]string{"exec", "run_ruby", "1"}, 2, `unknown tool "run_ruby"`},
		{[]string{"exec", "--memory", "lots", "run_python", "1"}, 2, `--memory "lots"`},
		{[]string{"worker"}, 2, "--redis (or AIRLOCK_REDIS_URL) is required"},
		{[]string{"images", "paint"}, 2, "usage: airlock images"},
		{[]string{"serve", "--addr", "0.0.0.0:8080", "--insecure-local"}, 2, "loopback"},
	} {
		var out, errb bytes.Buffer
		t.Setenv("AIRLOCK_REDIS_URL", "")
		code := run(c.args, strings.NewReader(""), &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("airlock %v: exit %d, stderr %q; want exit %d and %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		res  core.Result
		want int
	}{
		{core.Result{Status: core.StatusOK}, 0},
		{core.Result{Status: core.StatusError, ExitCode: 3}, 3},
		{core.Result{Status: core.StatusError, ExitCode: -1}, 1},
		{core.Result{Status: core.StatusTimeout}, 124},
		{core.Result{Status: core.StatusOOM}, 137},
		{core.Result{Status: core.StatusOutputLimit}, 125},
		{core.Result{Status: core.StatusRejected}, 126},
	} {
		if got := exitCode(c.res); got != c.want {
			t.Errorf("%s/%d: exit %d, want %d", c.res.Status, c.res.ExitCode, got, c.want)
		}
	}
}
