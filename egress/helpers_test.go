package egress

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-dev/airlock/internal/testscale"
)

// testCert returns a self-signed certificate for names (also its own
// root) and a pool holding it.
func testCert(t testing.TB, names ...string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: names[0]},
		DNSNames:              names,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// countingListener counts the connections a test server accepted: its
// "log" of connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// testServer is an HTTP(S) server on loopback that counts connections.
type testServer struct {
	*httptest.Server
	ln *countingListener
}

// port returns the server's port.
func (s *testServer) port() int {
	ap := netip.MustParseAddrPort(s.Listener.Addr().String())
	return int(ap.Port())
}

// conns returns how many connections the server accepted.
func (s *testServer) conns() int64 { return s.ln.n.Load() }

// newTestServer starts h on 127.0.0.1, with TLS when cert is non-nil.
func newTestServer(t testing.TB, h http.Handler, cert *tls.Certificate) *testServer {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	ln := &countingListener{Listener: s.Listener}
	s.Listener = ln
	if cert != nil {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return &testServer{Server: s, ln: ln}
}

// testResolver maps the tests' names: allowed.test, other.test and
// refused.test to loopback, sneaky.test to a private address no operator
// allowed, meta.test to the metadata address.
func testResolver() *StaticResolver {
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	return &StaticResolver{Hosts: map[string][]netip.Addr{
		"allowed.test": lo, "other.test": lo, "refused.test": lo,
		"sneaky.test": {netip.MustParseAddr("10.99.0.1")},
		"meta.test":   {netip.MustParseAddr("169.254.169.254")},
		"mapped.test": {netip.MustParseAddr("::ffff:169.254.169.254")},
	}}
}

// fenceDialer dials only inside one range (the test's own servers) and
// fails the test on anything else without sending a packet: should the
// guard ever let a forbidden address through, the test catches it before
// any traffic leaves for an address it did not create.
type fenceDialer struct {
	t     testing.TB
	allow netip.Prefix
}

func (d fenceDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !d.allow.Contains(ap.Addr().Unmap()) {
		d.t.Errorf("the proxy tried to dial %s, outside %s", address, d.allow)
		return nil, fmt.Errorf("test fence: %s is outside %s", address, d.allow)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

// loopbackFence is the unit tests' dialer.
func loopbackFence(t testing.TB) Dialer {
	return fenceDialer{t: t, allow: netip.MustParsePrefix("127.0.0.0/8")}
}

// loopbackGuard returns a guard that admits loopback (tests only).
func loopbackGuard(t testing.TB) *Guard {
	g, err := NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	AllowLoopbackForTest(t, g)
	return g
}

// events collects audit events.
type events struct {
	mu  sync.Mutex
	evs []Event
}

func (e *events) add(ev Event) { e.mu.Lock(); e.evs = append(e.evs, ev); e.mu.Unlock() }

// wait waits until n events came in (each is an attempt that ended).
func (e *events) wait(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(testscale.D(10 * time.Second))
	for len(e.all()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d audit events, want %d", len(e.all()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *events) all() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.evs...)
}

// testProxy is a proxy on 127.0.0.1 with its registry and audit events.
type testProxy struct {
	*Proxy
	addr string
	reg  *prometheus.Registry
	evs  *events
}

// newTestProxy starts a proxy on loopback; mod may change its config.
func newTestProxy(t testing.TB, mod func(*Config)) *testProxy {
	t.Helper()
	evs := &events{}
	reg := prometheus.NewRegistry()
	cfg := Config{Guard: loopbackGuard(t), Resolver: testResolver(), Dialer: loopbackFence(t), Audit: evs.add, Registerer: reg}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() {
		_ = p.Close()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &testProxy{Proxy: p, addr: ln.Addr().String(), reg: reg, evs: evs}
}

// register registers 127.0.0.1 for a call with policy pol.
func (tp *testProxy) register(t testing.TB, pol string, caps Caps) *Handle {
	t.Helper()
	p, err := Parse(pol)
	if err != nil {
		t.Fatal(err)
	}
	h, err := tp.Register(netip.MustParseAddr("127.0.0.1"), CallInfo{Owner: "alice", CallID: "call-1", Policy: p, Caps: caps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// client returns an HTTP client that goes through the proxy and trusts
// pool.
func (tp *testProxy) client(pool *x509.CertPool) *http.Client {
	u, _ := url.Parse("http://" + tp.addr)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy:             http.ProxyURL(u),
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		DisableKeepAlives: true,
	}}
}

// hostPort formats name:port.
func hostPort(name string, port int) string { return net.JoinHostPort(name, strconv.Itoa(port)) }
