package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/docker/docker/api/types/container"
	"golang.org/x/sys/unix"
)

// LinkPath is where a container's link socket is mounted: its controller
// connects there first thing (AIRLOCK_LINK) and from then on takes
// requests and sends frames on that one connection (PROTOCOL.md).
const LinkPath = "/run/airlock/link.sock"

// LabelWire is the image label naming how its controller talks to
// Airlock; only WireLink is spoken (an image without it carries an older
// controller and must be rebuilt).
const (
	LabelWire = "airlock.wire"
	WireLink  = "link"
)

// linkSocket is the socket's name in a link's directory.
const linkSocket = "link.sock"

// linkPrefix starts the name of every link's directory; the rest is the
// link's id, which its container carries as LabelLink (link_sweep.go).
const linkPrefix = "link-"

// LabelLink is the container label naming the link it was made with.
const LabelLink = "airlock.link"

// linkBoot bounds how long a new container's controller may take to
// connect (a cold start on a loaded machine takes seconds).
const linkBoot = 2 * time.Minute

// link is one container's listening socket until its controller has
// connected: a unix socket (mode 0666, so the container's uid can
// connect) in a directory of its own (0700, the server's) under the link
// folder. Only the socket is bind-mounted, read-only, at LinkPath.
type link struct {
	id  string // the folder's name is linkPrefix+id; containers carry it as LabelLink
	dir string
	ln  *net.UnixListener
}

// path is the host path of the socket, to bind-mount.
func (l *link) path() string { return filepath.Join(l.dir, linkSocket) }

// close stops listening and removes the socket and its directory. The
// container's mount keeps the inode, but nobody listens on it any more:
// a later connect there is refused.
func (l *link) close() {
	_ = l.ln.Close()
	_ = os.RemoveAll(l.dir)
}

// linkDir is the folder links are made in: Config.LinkDir, or else a
// private folder (0700 under os.TempDir) the engine makes on first use and
// removes on Close.
func (e *Engine) linkDir() (string, error) {
	if e.cfg.LinkDir != "" {
		return e.cfg.LinkDir, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ownLinkDir == "" {
		d, err := os.MkdirTemp("", "airlock-link-")
		if err != nil {
			return "", fmt.Errorf("sandbox: link folder: %w: %w", core.ErrUnavailable, err)
		}
		e.ownLinkDir = d
	}
	return e.ownLinkDir, nil
}

// removeOwnLinkDir removes the link folder the engine made, if any.
func (e *Engine) removeOwnLinkDir() {
	e.mu.Lock()
	d := e.ownLinkDir
	e.ownLinkDir = ""
	e.mu.Unlock()
	if d != "" {
		_ = os.RemoveAll(d)
	}
}

// openLink makes a listening link for a container about to be created.
func (e *Engine) openLink() (*link, error) {
	parent, err := e.linkDir()
	if err != nil {
		return nil, err
	}
	id := newID()
	dir := filepath.Join(parent, linkPrefix+id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: link directory (--link-dir %s): %w: %w", parent, core.ErrUnavailable, err)
	}
	l := &link{id: id, dir: dir}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: l.path(), Net: "unix"})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox: link socket: %w: %w", core.ErrUnavailable, err)
	}
	l.ln = ln
	if err := os.Chmod(l.path(), 0o666); err != nil {
		l.close()
		return nil, fmt.Errorf("sandbox: link socket mode: %w: %w", core.ErrUnavailable, err)
	}
	return l, nil
}

// acceptLink waits for the controller of container id to connect (until
// deadline, ctx's end or the container's exit), checks the peer (linkPeer)
// and closes the listener and removes the socket whatever happens: one
// connection is ever taken, so nothing started in the container later can
// connect. The caller removes the container on error.
func (e *Engine) acceptLink(ctx context.Context, l *link, id string, uid int, deadline time.Time) (*net.UnixConn, error) {
	defer l.close()
	_ = l.ln.SetDeadline(deadline)
	var gone atomic.Bool
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	go func() {
		// AutoRemove: an exited container is removed; one already gone is an error.
		waitC, errC := e.docker.ContainerWait(wctx, id, container.WaitConditionRemoved)
		select {
		case <-waitC:
		case <-errC:
		}
		if wctx.Err() == nil {
			gone.Store(true)
			_ = l.ln.SetDeadline(time.Now())
		}
	}()
	stop := context.AfterFunc(ctx, func() { _ = l.ln.SetDeadline(time.Now()) })
	defer stop()
	conn, err := l.ln.AcceptUnix()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%w: %w", core.ErrUnavailable, context.Cause(ctx))
		case gone.Load():
			return nil, fmt.Errorf("%w: the controller exited without connecting to its link: an image older than the link (rebuild: make images), "+
				"or a Docker daemon that does not see --link-dir (AIRLOCK_LINK_DIR) %s at the same path (a remote DOCKER_HOST?)", core.ErrUnavailable, filepath.Dir(l.dir))
		default:
			return nil, fmt.Errorf("%w: the controller did not connect to its link within %s: %w", core.ErrUnavailable, linkBoot, err)
		}
	}
	if err := e.linkPeer(ctx, conn, id, uid); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return conn, nil
}

// checkLinkPeer refuses a link connection that is not the controller of
// container id: the peer's uid (SO_PEERCRED) must be the container's and
// its pid the container's pid 1 as the daemon reports it (a host pid). A
// peer pid of 0 is one outside this process's pid namespace (Airlock itself
// in a container, as under docker-compose): every sandbox process looks
// so, the pid cannot be compared, and the uid and the single accept stand.
func (e *Engine) checkLinkPeer(ctx context.Context, conn *net.UnixConn, id string, uid int) error {
	cred, err := peerCred(conn)
	if err != nil {
		return fmt.Errorf("%w: link of %s: %w", core.ErrUnavailable, short(id), err)
	}
	if int(cred.Uid) != uid {
		return fmt.Errorf("%w: link of %s connected by uid %d, not the container's %d: refused", core.ErrUnavailable, short(id), cred.Uid, uid)
	}
	if cred.Pid == 0 {
		return nil
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	info, err := e.docker.ContainerInspect(ictx, id)
	if err != nil || info.ContainerJSONBase == nil || info.State == nil {
		return fmt.Errorf("%w: link of %s: inspect: %v", core.ErrUnavailable, short(id), err)
	}
	if int(cred.Pid) != info.State.Pid {
		return fmt.Errorf("%w: link of %s connected by pid %d, not the container's pid 1 (%d): refused", core.ErrUnavailable, short(id), cred.Pid, info.State.Pid)
	}
	return nil
}

// peerCred reads the connected peer's credentials (SO_PEERCRED: as of its
// connect, in this process's pid and user namespaces).
func peerCred(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	if cerr != nil {
		return nil, fmt.Errorf("peer credentials: %w", cerr)
	}
	return cred, nil
}

// unseenLink turns a create error about the link's bind mount into one
// naming the flag: the daemon does not see the link folder (a remote
// DOCKER_HOST, or a daemon in another mount namespace).
func unseenLink(err error, linkPath string) error {
	if linkPath == "" || !strings.Contains(err.Error(), "bind source path") {
		return nil
	}
	return fmt.Errorf("%w: the Docker daemon does not see the link socket %s: --link-dir (AIRLOCK_LINK_DIR) must be a folder the daemon sees at the same path (a remote DOCKER_HOST cannot; mount it at the same path when Airlock runs in a container): %w",
		core.ErrUnavailable, linkPath, err)
}
