package sandbox

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// TestSnapFailOutOfRoom: a snapshot that did not fit the sandbox's /tmp
// (over the session's file size limit, or the tmpfs full) is too_large and
// names the limits to raise; other failures keep their words and stay bad
// input.
func TestSnapFailOutOfRoom(t *testing.T) {
	for _, fail := range []string{
		"the namespace could not be saved: OSError: [Errno 27] File too large",
		"the namespace could not be saved: OSError: [Errno 28] No space left on device",
	} {
		if c := snapFailCode(fail); c != core.ErrTooLarge {
			t.Errorf("%q: code %v, want too_large", fail, c)
		}
		if m := snapFailMessage(fail); !strings.HasPrefix(m, fail) || !strings.Contains(m, "file_size_bytes") || !strings.Contains(m, "tmpfs_bytes") {
			t.Errorf("%q: message %q names no limit to raise", fail, m)
		}
	}
	other := "the namespace could not be saved: TypeError: boom"
	if c, m := snapFailCode(other), snapFailMessage(other); c != core.ErrInvalid || m != other {
		t.Errorf("%q: %v %q, want invalid with the controller's words", other, c, m)
	}
}
