package api

import (
	"crypto/rand"
	"strings"
)

// newID returns prefix followed by 26 random base32 characters.
func newID(prefix string) string {
	return prefix + strings.ToLower(rand.Text())
}
