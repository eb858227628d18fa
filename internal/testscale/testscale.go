package testscale

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// Env names the variable that sets the factor.
const Env = "AIRLOCK_TEST_SCALE"

// ciFactor is the default when CI=true: CI machines run the packages side
// by side on two shared cores.
const ciFactor = 3

// Factor returns the scale factor: AIRLOCK_TEST_SCALE when set (a number
// ≥ 1), else 3 when CI=true, else 1. A malformed value panics, naming it,
// so a typo never silently shortens every bound.
func Factor() float64 {
	v := os.Getenv(Env)
	if v == "" {
		if os.Getenv("CI") == "true" {
			return ciFactor
		}
		return 1
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 {
		panic(fmt.Sprintf("testscale: %s=%q is not a number ≥ 1", Env, v))
	}
	return f
}

// D scales a timing bound by Factor.
func D(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Factor())
}
