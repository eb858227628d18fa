package sandbox

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
)

// EgressConfig connects the engine to its worker's egress proxy (issue 29).
// A call whose Request.Egress names hosts gets a container of its own with
// a door: a unix socket of the proxy in a private directory under DoorDir,
// bind-mounted at DoorPath. The container keeps NetworkMode none (no route,
// no DNS, no UDP); its controller relays 127.0.0.1:RelayPort to the door,
// and its environment points HTTP_PROXY, HTTPS_PROXY (both cases) and
// PIP_PROXY there. A call without a policy gets exactly what it always got:
// no mount, no proxy variables.
type EgressConfig struct {
	// Proxy is the worker's egress proxy (nil: calls with a policy are
	// refused, naming the missing proxy).
	Proxy *egress.Proxy
	// DoorDir is the host folder doors are made in (it must exist; a path
	// the Docker daemon sees, as it bind-mounts from it).
	DoorDir string
	// Caps bound each call's network use (zero fields: the proxy's).
	Caps egress.Caps
	// PipIndex, if set, is pip's index URL in every container with a door
	// (PIP_INDEX_URL; the operator's mirror, e.g. https://pypi.internal/simple).
	PipIndex string
}

// DoorPath is where a container's door is mounted.
const DoorPath = "/run/airlock/egress.sock"

// RelayPort is the loopback port the controller relays to the door.
const RelayPort = 3128

// featureEgress is the ready-frame feature of a controller that relays a door.
const featureEgress = "egress"

// egressPolicy parses a request's Egress ("" is the zero Policy). A policy
// on an engine without a proxy is refused with core.ErrUnavailable.
func (e *Engine) egressPolicy(req core.Request) (egress.Policy, error) {
	if req.Egress == "" {
		return egress.Policy{}, nil
	}
	pol, err := egress.Parse(req.Egress)
	if err != nil {
		return egress.Policy{}, core.E("sandbox.egress", core.ErrInvalid, fmt.Errorf("the call's egress policy: %w", err))
	}
	if !pol.Empty() && e.cfg.Egress.Proxy == nil {
		return egress.Policy{}, core.Errorf("sandbox.egress", core.ErrUnavailable,
			"the call's key allows network access (egress), but this worker runs no egress proxy (start it with --egress-door-dir)")
	}
	return pol, nil
}

// egressEnv is the environment of a container with a door: the relay's
// socket and port for the controller, the proxy for programs and pip, and
// a user site under /work that pip installs into (a session keeps it, a
// one-shot call's is emptied with /work).
func (e *Engine) egressEnv(extra map[string]string) {
	proxy := "http://127.0.0.1:" + strconv.Itoa(RelayPort)
	for k, v := range map[string]string{
		"AIRLOCK_EGRESS_SOCKET": DoorPath,
		"AIRLOCK_EGRESS_PORT":   strconv.Itoa(RelayPort),
		"HTTP_PROXY":            proxy,
		"HTTPS_PROXY":           proxy,
		"http_proxy":            proxy,
		"https_proxy":           proxy,
		"PIP_PROXY":             proxy,
		"PYTHONUSERBASE":        "/work/.local",
		"PIP_USER":              "1",
		// The image's Python is Debian's (PEP 668); the user site is the
		// call's own, so pip may write there.
		"PIP_BREAK_SYSTEM_PACKAGES":     "1",
		"PIP_DISABLE_PIP_VERSION_CHECK": "1",
		"PIP_NO_CACHE_DIR":              "1",
	} {
		extra[k] = v
	}
	if e.cfg.Egress.PipIndex != "" {
		extra["PIP_INDEX_URL"] = e.cfg.Egress.PipIndex
		// pip ignores a plain-http index unless its host is trusted; plain
		// http is how the proxy can check package names (egress/packages.go).
		if u, err := url.Parse(e.cfg.Egress.PipIndex); err == nil && u.Scheme == "http" && u.Host != "" {
			extra["PIP_TRUSTED_HOST"] = u.Host
		}
	}
}

// openDoor opens a door for a container about to be created.
func (e *Engine) openDoor() (*egress.Door, error) {
	d, err := e.cfg.Egress.Proxy.OpenDoor(e.cfg.Egress.DoorDir)
	if err != nil {
		return nil, core.E("sandbox.egress", core.ErrUnavailable, err)
	}
	return d, nil
}

// trackDoor remembers container id's door, closed when it is removed.
func (e *Engine) trackDoor(id string, d *egress.Door) {
	e.mu.Lock()
	e.doors[id] = d
	e.mu.Unlock()
}

// closeDoor closes container id's door, if it has one.
func (e *Engine) closeDoor(id string) {
	e.mu.Lock()
	d := e.doors[id]
	delete(e.doors, id)
	e.mu.Unlock()
	if d != nil {
		if err := d.Close(); err != nil {
			e.log.Warn("close egress door", "container", short(id), "err", err)
		}
	}
}

// netCall registers one call on box b's door, if it has one; the
// returned end closes the registration and returns what the call
// attempted.
func (e *Engine) netCall(b *box, owner, callID string) (end func() []core.NetworkAttempt, err error) {
	if b.door == nil {
		return func() []core.NetworkAttempt { return nil }, nil
	}
	h, err := b.door.Register(egress.CallInfo{Owner: owner, CallID: callID, Policy: b.egress, Caps: e.cfg.Egress.Caps})
	if err != nil {
		return nil, core.E("sandbox.egress", core.ErrUnavailable, err)
	}
	return func() []core.NetworkAttempt {
		rec := h.Close()
		out := make([]core.NetworkAttempt, 0, len(rec.Attempts))
		for _, a := range rec.Attempts {
			out = append(out, core.NetworkAttempt{Host: a.Host, Port: a.Port, Allowed: a.Allowed, Reason: a.Reason, Bytes: a.Bytes})
		}
		if rec.Omitted > 0 {
			out = append(out, core.NetworkAttempt{Host: fmt.Sprintf("(%d more attempts not listed)", rec.Omitted), Reason: "not_recorded"})
		}
		return out
	}, nil
}
