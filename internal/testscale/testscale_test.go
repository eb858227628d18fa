package testscale

import (
	"testing"
	"time"
)

func TestFactor(t *testing.T) {
	for _, tc := range []struct {
		scale, ci string
		want      float64
	}{
		{"", "", 1},
		{"", "true", ciFactor},
		{"2.5", "true", 2.5},
		{"4", "", 4},
	} {
		t.Setenv(Env, tc.scale)
		t.Setenv("CI", tc.ci)
		if got := Factor(); got != tc.want {
			t.Errorf("scale %q ci %q: Factor() = %v, want %v", tc.scale, tc.ci, got, tc.want)
		}
	}
	t.Setenv(Env, "3")
	if got := D(2 * time.Second); got != 6*time.Second {
		t.Errorf("D(2s) at 3 = %v, want 6s", got)
	}
}

func TestFactorRefusesNonsense(t *testing.T) {
	for _, v := range []string{"fast", "0.5", "-1"} {
		t.Setenv(Env, v)
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s=%q: no panic", Env, v)
				}
			}()
			Factor()
		}()
	}
}
