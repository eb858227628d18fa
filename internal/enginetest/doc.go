// Package enginetest starts a real sandbox engine for integration tests of
// the packages above the sandbox: skipped under -short, skipped without
// the Docker daemon or the python image except in CI (CI=true), where
// either missing fails the test.
package enginetest
