package core

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestCheckEnv: the names and sizes of a call's env, refused with the
// variable named and ErrInvalid.
func TestCheckEnv(t *testing.T) {
	if err := CheckEnv(map[string]string{"MY_VAR": "v", "_X1": "", "DB_PASSWORD": "p", "PATHS": "ok", "LD": "ok"}); err != nil {
		t.Fatalf("valid env refused: %v", err)
	}
	for name, want := range map[string]string{
		"PATH": "PATH", "HOME": "HOME", "AIRLOCK_X": "AIRLOCK_*", "PYTHONPATH": "PYTHON*", "PYTHONSTARTUP": "PYTHON*",
		"LD_PRELOAD": "LD_*", "my_var": "not a valid variable name", "1X": "not a valid variable name", "": "not a valid",
		strings.Repeat("A", MaxEnvNameBytes+1): "longer than",
	} {
		err := CheckEnv(map[string]string{name: "v"})
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) || (len(name) < 20 && !strings.Contains(err.Error(), name)) {
			t.Errorf("env %.20q: %v, want an ErrInvalid naming it and %q", name, err, want)
		}
	}
	for _, env := range []map[string]string{
		{"A": "x\x00y"},
		{"A": strings.Repeat("x", MaxEnvValueBytes+1)},
		{"A": strings.Repeat("x", MaxEnvValueBytes), "B": strings.Repeat("x", MaxEnvValueBytes), "C": "x"},
	} {
		if err := CheckEnv(env); err == nil || strings.Contains(err.Error(), "xxxx") {
			t.Errorf("env %.40v: %v (refused, without quoting the value)", env, err)
		}
	}
	many := map[string]string{}
	for i := range MaxEnvVars + 1 {
		many["V"+strings.Repeat("X", i)] = ""
	}
	if err := CheckEnv(many); err == nil {
		t.Error("too many variables accepted")
	}
}

// TestSeconds: wire seconds convert without wrapping around.
func TestSeconds(t *testing.T) {
	for s, want := range map[float64]time.Duration{1.5: 1500 * time.Millisecond, 0: 0, 9.3e9: math.MaxInt64, 1e300: math.MaxInt64, -1: -1, math.NaN(): -1} {
		if got := Seconds(s); got != want {
			t.Errorf("Seconds(%g) = %v, want %v", s, got, want)
		}
	}
}

// TestLimitsOver: each field over the ceiling is named with its wire name
// and the ceiling; a zero ceiling field caps nothing.
func TestLimitsOver(t *testing.T) {
	c := Limits{Timeout: 10 * time.Second, Memory: 100, CPUs: 1}
	if got := (Limits{Timeout: 10 * time.Second, Memory: 100, Pids: 1 << 20}).Over(c); got != nil {
		t.Errorf("within: %v", got)
	}
	got := strings.Join(Limits{Timeout: Seconds(9.3e9), Memory: 101, CPUs: 2}.Over(c), "; ")
	for _, w := range []string{"timeout_seconds 9.223372036854776e+09 is over 10", "memory_bytes 101 is over 100", "cpus 2 is over 1"} {
		if !strings.Contains(got, w) {
			t.Errorf("over: %q lacks %q", got, w)
		}
	}
}
