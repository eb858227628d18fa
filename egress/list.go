package egress

import (
	"strconv"
	"strings"
)

// splitList splits a comma-separated flag value, trimming spaces and
// dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// itoa formats an int.
func itoa(n int) string { return strconv.Itoa(n) }
