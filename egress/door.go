package egress

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/core"
)

// source names who a client connection belongs to: a source address (a
// listener on an IP network) or a door.
type source struct {
	addr netip.Addr
	door string
}

// String names the source in refusals and logs.
func (s source) String() string {
	if s.door != "" {
		return "door " + s.door
	}
	return s.addr.String()
}

// DoorSocket is the name of a door's socket file in its directory.
const DoorSocket = "egress.sock"

// Door is one sandbox's private way to the proxy: a unix socket the proxy
// listens on, in a directory of its own, which the worker bind-mounts into
// that sandbox alone. The proxy knows the caller by the door a connection
// came through, so the sandbox needs no network at all (NetworkMode none:
// no route, no DNS, no UDP); the controller inside relays a loopback port
// to the socket. A door serves one call at a time (Register).
type Door struct {
	p    *Proxy
	ln   net.Listener
	dir  string
	name string
	done chan struct{}
}

// OpenDoor creates a door: a fresh private directory under parent (which
// must exist) holding the socket DoorSocket, served until Close. The
// socket is mode 0666 so that any uid of the sandbox may connect; the
// directory is 0700, so no one else on the host reaches it.
func (p *Proxy) OpenDoor(parent string) (*Door, error) {
	if p.ctx.Err() != nil {
		return nil, core.Errorf("egress.door", core.ErrUnavailable, "the egress proxy is closed")
	}
	var b [9]byte
	_, _ = rand.Read(b[:])
	name := hex.EncodeToString(b[:])
	dir := filepath.Join(parent, "door-"+name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("egress: door directory: %w", err)
	}
	path := filepath.Join(dir, DoorSocket)
	ln, err := net.Listen("unix", path)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("egress: door socket: %w", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		_ = ln.Close()
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("egress: door socket mode: %w", err)
	}
	d := &Door{p: p, ln: ln, dir: dir, name: name, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		err := p.serve(ln, func(net.Conn) source { return source{door: name} })
		if err != nil && !errors.Is(err, net.ErrClosed) {
			p.cfg.Log.Warn("egress door", "door", name, "err", err)
		}
	}()
	return d, nil
}

// Path is the host path of the door's socket, to bind-mount.
func (d *Door) Path() string { return filepath.Join(d.dir, DoorSocket) }

// Name identifies the door (it is the Event's Door).
func (d *Door) Name() string { return d.name }

// Register makes the door's connections belong to the call info
// describes, until the handle closes. A door already running a call is
// refused with core.ErrConflict.
func (d *Door) Register(info CallInfo) (*Handle, error) {
	return d.p.register(source{door: d.name}, info)
}

// Close stops serving the door and removes its directory. Calls still
// registered on it keep their handles (Close them to end the calls).
func (d *Door) Close() error {
	err := d.ln.Close()
	<-d.done
	if rerr := os.RemoveAll(d.dir); rerr != nil {
		return fmt.Errorf("egress: remove door: %w", rerr)
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("egress: close door: %w", err)
	}
	return nil
}
