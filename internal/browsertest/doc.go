// Package browsertest runs one headless Chromium (Debian's chromium) per
// test binary for its browser tests, a tab in a browser context of its own
// per test; it collects the page's JavaScript exceptions and says where
// screenshots go. Without Chromium it skips the test, except in CI
// (CI=true), where that is a failure.
package browsertest
