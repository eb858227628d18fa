package egress

import "testing"

// AllowLoopbackForTest makes g accept loopback addresses, so that a test's
// servers and proxy on 127.0.0.1 can stand in for real hosts. It takes the
// test's testing.TB to say what it is for: production code builds its
// Guard with NewGuard only, which can never allow loopback.
func AllowLoopbackForTest(tb testing.TB, g *Guard) {
	tb.Helper()
	g.loopback = true
}
