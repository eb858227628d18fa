package main

import (
	"strings"
	"testing"
	"time"
)

// TestNegativeHibernationFlagsRefused: serve --hibernate-after -5s and a
// negative --session-autosnapshot-max-bytes are refused naming the flag;
// they were taken silently as off.
func TestNegativeHibernationFlagsRefused(t *testing.T) {
	for _, c := range []struct {
		f    sandboxFlags
		flag string
	}{
		{sandboxFlags{hibernateAfter: -5 * time.Second}, "--hibernate-after"},
		{sandboxFlags{autoSnapMax: -1}, "--session-autosnapshot-max-bytes"},
		{sandboxFlags{autoSnapQuiet: -time.Millisecond}, "--session-autosnapshot-quiet"},
	} {
		_, err := c.f.engine(logger(new(strings.Builder), false), nil)
		if err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%s negative: %v, want an error naming it", c.flag, err)
		}
	}
}
