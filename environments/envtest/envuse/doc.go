// Package envuse builds the one test environment that the tests of
// environments in use share (UseSpec: a Debian package, a CLI and a wheel
// the default image lacks). It is apart from envtest because it needs the
// builder, whose own tests use envtest.
package envuse
