package toolcalls

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/wire"
)

// TestSessionLimits: a session opened without a timeout gets the session
// call timeout, may ask for up to it although its key's ceiling is lower,
// and is refused above it naming the field; one-shot limits keep the
// key's ceiling.
func TestSessionLimits(t *testing.T) {
	ks, err := keys.New("alice:key-alice-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	g := &Grants{Keys: ks, DefaultLimits: core.Limits{Timeout: 10 * time.Second},
		MaxLimits: core.Limits{Timeout: 5 * time.Minute}, SessionCallTimeout: 2 * time.Minute}
	owner := "alice"
	l, err := g.SessionLimits(owner, nil)
	if err != nil || l.Timeout != 2*time.Minute {
		t.Fatalf("no limits: %v %v, want the session call timeout", l.Timeout, err)
	}
	l, err = g.SessionLimits(owner, &wire.Limits{TimeoutSeconds: 60})
	if err != nil || l.Timeout != time.Minute {
		t.Fatalf("60 s: %v %v", l.Timeout, err)
	}
	if _, err = g.SessionLimits(owner, &wire.Limits{TimeoutSeconds: 200}); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("200 s: %v, want invalid naming timeout", err)
	}
	if _, err = g.Limits(owner, &wire.Limits{TimeoutSeconds: 60}); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("one-shot 60 s: %v, want the key's ceiling of 10 s", err)
	}
}
