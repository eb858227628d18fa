package api

import (
	"fmt"
	"net"
	"strings"

	"github.com/airlock-dev/airlock/keys"
)

// ValidateListen checks that addr and the auth mode fit together: insecure
// local mode (no keys) only on a loopback address, and otherwise at least
// one API key. The serve command calls it before New.
func ValidateListen(addr string, insecureLocal bool, ks *keys.Set) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if insecureLocal {
		if !isLoopback(host) {
			return fmt.Errorf("--insecure-local refused on %q: only a loopback address (127.0.0.1, ::1, localhost) may serve without API keys", addr)
		}
		if ks.Len() > 0 {
			return fmt.Errorf("--insecure-local and API keys are exclusive")
		}
		return nil
	}
	if ks.Len() == 0 {
		return fmt.Errorf("no API keys: set %s, pass a keys file, or use --insecure-local on a loopback address", keys.Env)
	}
	return nil
}

// isLoopback reports whether host names only loopback interfaces. An empty
// host (all interfaces) is not loopback.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
