package main

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// TestBadNumberEnvRefused: a duration or number flag's AIRLOCK_* variable
// that does not parse stops the command with exit 2 and a message naming
// the variable and its value. It was silently replaced by the default, so
// AIRLOCK_HIBERNATE_AFTER=banana served with 15m.
func TestBadNumberEnvRefused(t *testing.T) {
	for _, c := range []struct {
		cmd      []string
		env, val string
	}{
		{[]string{"serve", "--insecure-local", "--addr", "127.0.0.1:0"}, "AIRLOCK_HIBERNATE_AFTER", "banana"},
		{[]string{"serve", "--insecure-local", "--addr", "127.0.0.1:0"}, "AIRLOCK_KERNEL_CULL_IDLE", "10"},
		{[]string{"worker", "--redis", "redis://127.0.0.1:1"}, "AIRLOCK_CONCURRENCY", "four"},
		{[]string{"exec", "run_python", "print(1)"}, "AIRLOCK_POOL_SIZE", "2x"},
		{[]string{"exec", "run_python", "print(1)"}, "AIRLOCK_SINGLE_USE", "yes"},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(c.env, c.val)
			var out, errb strings.Builder
			code := run(c.cmd, strings.NewReader(""), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), c.env) || !strings.Contains(errb.String(), c.val) {
				t.Fatalf("%s=%s: exit %d, stderr %q; want exit 2 naming the variable and value", c.env, c.val, code, errb.String())
			}
		})
	}
}

// TestGoodNumberEnvTaken: valid variables pass the check, and a flag
// given on the command line makes its variable irrelevant.
func TestGoodNumberEnvTaken(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var d time.Duration
	var n int
	fs.DurationVar(&d, "after", envDuration("AIRLOCK_T_AFTER", time.Second), "x (env AIRLOCK_T_AFTER)")
	fs.IntVar(&n, "n", envInt("AIRLOCK_T_N", 1), "x (env AIRLOCK_T_N)")
	t.Setenv("AIRLOCK_T_AFTER", "7s")
	t.Setenv("AIRLOCK_T_N", "banana")
	if err := fs.Parse([]string{"--n", "3"}); err != nil {
		t.Fatal(err)
	}
	if err := checkNumberEnv(fs); err != nil {
		t.Fatalf("refused: %v", err)
	}
	// AIRLOCK_SINGLE_USE=true turns --single-use on, as 1 does (it was
	// taken as false: only "1" counted).
	t.Setenv("AIRLOCK_SINGLE_USE", "true")
	var sf sandboxFlags
	sfs := flag.NewFlagSet("y", flag.ContinueOnError)
	sf.register(sfs, 0)
	if !sf.singleUse {
		t.Fatal("AIRLOCK_SINGLE_USE=true left --single-use off")
	}
}
