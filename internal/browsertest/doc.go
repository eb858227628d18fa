// Package browsertest starts headless Chromium (Debian's chromium) for
// browser tests, collects the page's JavaScript exceptions and says where
// screenshots go. Without Chromium it skips the test, except in CI
// (CI=true), where that is a failure.
package browsertest
