package jupyter

import "strings"

// jupyter_server accepts only UUID-shaped kernel ids in its URLs (five
// runs of word characters joined by "-"), so a kernel's id is its session
// id with dashes: "s-" and 24 hex digits become "s-" 8-4-4-8. Both forms
// name the kernel in the gateway's own routes.

// kernelID is the kernel id of session id.
func kernelID(session string) string {
	h, ok := strings.CutPrefix(session, "s-")
	if !ok || len(h) != 24 || !isHex(h) {
		return session
	}
	return "s-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:]
}

// sessionID is the session id a kernel id names (either form).
func sessionID(kernel string) string {
	h, ok := strings.CutPrefix(kernel, "s-")
	if !ok {
		return kernel
	}
	if plain := strings.ReplaceAll(h, "-", ""); len(plain) == 24 && isHex(plain) && kernelID("s-"+plain) == kernel {
		return "s-" + plain
	}
	return kernel
}

// isHex reports whether s is lower-case hex digits.
func isHex(s string) bool {
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
