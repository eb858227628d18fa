package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"slices"
	"time"
)

// extensionECH is the TLS encrypted_client_hello extension: with it, the
// server name the proxy sees is only the outer, public one.
const extensionECH = 0xfe0d

// hello is what a tunnel's TLS ClientHello says.
type hello struct {
	serverName string
	ech        bool
}

// errPeeked stops the TLS handshake once the ClientHello is read.
var errPeeked = errors.New("egress: ClientHello read")

// peekHello reads the TLS ClientHello a client sends first in a tunnel,
// with crypto/tls's own parser (a server handshake that stops as soon as
// the hello is parsed; nothing is ever written to the client), and returns
// it with every byte read, which the caller forwards upstream. A tunnel
// that does not start with a ClientHello is an error.
func peekHello(r io.Reader, c net.Conn) (*hello, []byte, error) {
	rec := &recordingConn{r: r, conn: c}
	var got *hello
	capture := func(chi *tls.ClientHelloInfo) {
		got = &hello{serverName: chi.ServerName, ech: slices.Contains(chi.Extensions, extensionECH)}
	}
	cfg := &tls.Config{
		GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			capture(chi)
			return nil, errPeeked
		},
		// Called before GetConfigForClient when the hello carries ECH.
		GetEncryptedClientHelloKeys: func(chi *tls.ClientHelloInfo) ([]tls.EncryptedClientHelloKey, error) {
			capture(chi)
			return nil, errPeeked
		},
	}
	err := tls.Server(rec, cfg).HandshakeContext(context.Background())
	if got == nil {
		if err == nil {
			err = errors.New("egress: no ClientHello")
		}
		return nil, rec.buf.Bytes(), err
	}
	return got, rec.buf.Bytes(), nil
}

// recordingConn is the read side of a client connection that keeps every
// byte read; writes fail (the peek never answers the client).
type recordingConn struct {
	r    io.Reader
	conn net.Conn
	buf  bytes.Buffer
}

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.buf.Write(b[:n])
	return n, err
}

func (c *recordingConn) Write([]byte) (int, error)        { return 0, io.ErrClosedPipe }
func (c *recordingConn) Close() error                     { return nil }
func (c *recordingConn) LocalAddr() net.Addr              { return c.conn.LocalAddr() }
func (c *recordingConn) RemoteAddr() net.Addr             { return c.conn.RemoteAddr() }
func (c *recordingConn) SetDeadline(time.Time) error      { return nil }
func (c *recordingConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recordingConn) SetWriteDeadline(time.Time) error { return nil }

// checkHello returns why a tunnel to host (normalized) whose ClientHello
// is h must be refused, or "". The server name must be the CONNECT host
// itself (another name, even an allowed one, is domain fronting); a tunnel
// to a host name must name it (no SNI would reach whatever the server
// serves by default); a tunnel to an IP address must name none (clients
// send no SNI for addresses); an encrypted ClientHello hides the real name.
func checkHello(host string, h *hello) string {
	if h.ech {
		return ReasonECH
	}
	sni, _ := normalizeDest(h.serverName)
	switch {
	case isIPHost(host) && h.serverName == "":
		return ""
	case isIPHost(host):
		return ReasonSNIMismatch
	case h.serverName == "":
		return ReasonSNIMissing
	case sni != host:
		return ReasonSNIMismatch
	}
	return ""
}
