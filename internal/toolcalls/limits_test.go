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

// TestCallInSessionTimeout: a call in a session may name a timeout up to
// the session's own per-call limit even where the key's ceiling is lower
// (a cell of a session opened with the 2 min session call timeout asking
// for 60 s), not above it, and a one-shot call keeps the key's ceiling;
// the dispatcher's ceiling (the bound of the tool's timeout_seconds
// argument) is raised the same way.
func TestCallInSessionTimeout(t *testing.T) {
	ks, err := keys.New("alice:key-alice-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Grants: Grants{Keys: ks, DefaultLimits: core.Limits{Timeout: 10 * time.Second},
		MaxLimits: core.Limits{Timeout: 5 * time.Minute}, SessionCallTimeout: 2 * time.Minute}}, nil, nil, nil)
	req := func(sec float64) *wire.ToolCallRequest {
		r := &wire.ToolCallRequest{Limits: &wire.Limits{TimeoutSeconds: sec}}
		r.Function.Name = "execute_python"
		return r
	}
	session := core.Limits{Timeout: 2 * time.Minute}
	call, err := s.CallIn("alice", req(60), "api", session)
	if err != nil || call.Limits.Timeout != time.Minute || call.Ceiling.Timeout != 2*time.Minute {
		t.Fatalf("session call of 60 s: %+v %v, want accepted under the session's 2 min", call.Limits, err)
	}
	if _, err := s.CallIn("alice", req(180), "api", session); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "timeout_seconds 180 is over 120") {
		t.Fatalf("session call of 180 s: %v, want invalid naming the 120 s bound", err)
	}
	if _, err := s.Call("alice", req(60), "api"); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("one-shot call of 60 s: %v, want the key's 10 s ceiling", err)
	}
}
