// Package testscale is the one scale factor of every timing bound in the
// test suite: a test that waits for something writes testscale.D(5*time.Second)
// instead of a bare 5 s, so the whole suite stretches together on a slow or
// busy machine (AIRLOCK_TEST_SCALE, default 1; 3 under CI).
package testscale
