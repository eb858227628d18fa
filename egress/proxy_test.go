package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/testscale"
)

// greet answers "hello from NAME" and the Host it was asked for.
func greet(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s (host %s)", name, r.Host)
	})
}

// rig is the usual set-up: an allowed HTTP and HTTPS server, a refused
// one, and a proxy.
type rig struct {
	tp                  *testProxy
	plain, tls, refused *testServer
	pool                *x509.CertPool
}

func newRig(t *testing.T, mod func(*Config)) *rig {
	cert, pool := testCert(t, "allowed.test", "other.test", "refused.test")
	return &rig{
		tp:      newTestProxy(t, mod),
		plain:   newTestServer(t, greet("plain"), nil),
		tls:     newTestServer(t, greet("tls"), &cert),
		refused: newTestServer(t, greet("refused"), &cert),
		pool:    pool,
	}
}

// policy allows allowed.test on the plain and TLS servers' ports, plus
// extra entries.
func (r *rig) policy(extra ...string) string {
	return strings.Join(append([]string{hostPort("allowed.test", r.plain.port()), hostPort("allowed.test", r.tls.port())}, extra...), ",")
}

// get fetches url through the proxy.
func (r *rig) get(t *testing.T, url string) (int, string, error) {
	t.Helper()
	resp, err := r.tp.client(r.pool).Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// rawConnect opens a client connection to the proxy and sends CONNECT.
func rawConnect(t *testing.T, proxy, target string) (net.Conn, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return c, resp
}

// only returns the single attempt of a record.
func only(t *testing.T, rec Record) Attempt {
	t.Helper()
	if len(rec.Attempts) != 1 || rec.Omitted != 0 {
		t.Fatalf("want one attempt, got %+v", rec)
	}
	return rec.Attempts[0]
}

func TestProxyAllowedHTTPAndHTTPS(t *testing.T) {
	r := newRig(t, nil)
	h := r.tp.register(t, r.policy(), Caps{})
	code, body, err := r.get(t, fmt.Sprintf("http://allowed.test:%d/x", r.plain.port()))
	if err != nil || code != 200 || body != fmt.Sprintf("hello from plain (host allowed.test:%d)", r.plain.port()) {
		t.Fatalf("plain: %d %q %v", code, body, err)
	}
	code, body, err = r.get(t, fmt.Sprintf("https://allowed.test:%d/", r.tls.port()))
	if err != nil || code != 200 || !strings.HasPrefix(body, "hello from tls") {
		t.Fatalf("tls: %d %q %v", code, body, err)
	}
	r.tp.evs.wait(t, 2)
	rec := h.Close()
	if len(rec.Attempts) != 2 {
		t.Fatalf("record %+v", rec)
	}
	for i, a := range rec.Attempts {
		if !a.Allowed || a.Reason != "" || a.Host != "allowed.test" || a.Bytes < 100 {
			t.Errorf("attempt %d: %+v", i, a)
		}
	}
	if rec.Attempts[0].Port != r.plain.port() || rec.Attempts[1].Port != r.tls.port() {
		t.Errorf("ports: %+v", rec.Attempts)
	}
	evs := r.tp.evs.all()
	if len(evs) != 2 || evs[0].Owner != "alice" || evs[0].CallID != "call-1" || evs[0].Kind != KindHTTP ||
		evs[1].Kind != KindConnect || evs[1].SNI != "allowed.test" || evs[1].Addr != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("audit events: %+v", evs)
	}
	if n := testutil.ToFloat64(r.tp.metrics.attempts.WithLabelValues(KindConnect, "allowed", "")); n != 1 {
		t.Errorf("allowed connect metric = %v", n)
	}
	if n, err := testutil.GatherAndCount(r.tp.reg, "airlock_egress_attempts_total", "airlock_egress_bytes_total"); err != nil || n < 3 {
		t.Errorf("registered series: %d, %v", n, err)
	}
}

func TestProxyRefusesHostsNotListed(t *testing.T) {
	r := newRig(t, nil)
	h := r.tp.register(t, r.policy(), Caps{})
	for _, url := range []string{
		fmt.Sprintf("http://refused.test:%d/", r.refused.port()),
		fmt.Sprintf("https://refused.test:%d/", r.refused.port()),
		fmt.Sprintf("https://allowed.test:%d/", r.refused.port()), // allowed name, port not listed
		fmt.Sprintf("http://127.0.0.1:%d/", r.refused.port()),     // raw IP, not listed
	} {
		code, _, err := r.get(t, url)
		if err == nil && code != http.StatusForbidden {
			t.Errorf("%s: %d, want refused", url, code)
		}
	}
	rec := h.Close()
	if len(rec.Attempts) != 4 {
		t.Fatalf("record %+v", rec)
	}
	for _, a := range rec.Attempts {
		if a.Allowed || a.Reason != ReasonNotAllowed || a.Bytes != 0 {
			t.Errorf("attempt %+v, want refused not_allowed", a)
		}
	}
	if n := r.refused.conns(); n != 0 {
		t.Errorf("the refused server saw %d connections", n)
	}
}

func TestProxyRefusedAnswer(t *testing.T) {
	r := newRig(t, nil)
	r.tp.register(t, r.policy(), Caps{})
	c, resp := rawConnect(t, r.tp.addr, hostPort("refused.test", r.refused.port()))
	defer c.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Airlock-Egress") != ReasonNotAllowed ||
		!strings.Contains(string(b), "refused.test") {
		t.Errorf("answer %d %v %q", resp.StatusCode, resp.Header, b)
	}
}

func TestProxyRefusesForbiddenAddresses(t *testing.T) {
	r := newRig(t, nil)
	port := r.refused.port()
	h := r.tp.register(t, r.policy(hostPort("sneaky.test", port), hostPort("meta.test", port),
		hostPort("mapped.test", port), hostPort("nowhere.test", port)), Caps{})
	want := map[string]string{"sneaky.test": ReasonPrivate, "meta.test": ReasonMetadata,
		"mapped.test": ReasonMetadata, "nowhere.test": ReasonResolve}
	for name := range want {
		if code, _, err := r.get(t, fmt.Sprintf("http://%s:%d/", name, port)); err != nil || code != http.StatusForbidden {
			t.Errorf("%s: %d %v, want 403", name, code, err)
		}
	}
	for _, a := range h.Close().Attempts {
		if a.Allowed || a.Reason != want[a.Host] {
			t.Errorf("attempt %+v, want refused %s", a, want[a.Host])
		}
	}
}

func TestProxyRefusesDomainFronting(t *testing.T) {
	r := newRig(t, nil)
	h := r.tp.register(t, r.policy(), Caps{})
	// The server's certificate is valid for other.test too: only the
	// proxy stands between the client and the fronted name.
	c, resp := rawConnect(t, r.tp.addr, hostPort("allowed.test", r.tls.port()))
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %d", resp.StatusCode)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "other.test", RootCAs: r.pool})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a TLS handshake naming another host went through")
	}
	a := only(t, h.Close())
	if a.Allowed || a.Reason != ReasonSNIMismatch {
		t.Errorf("attempt %+v, want sni_mismatch", a)
	}
	if n := r.tls.conns(); n != 0 {
		t.Errorf("the server saw %d connections for a refused tunnel", n)
	}
	if ev := r.tp.evs.all(); len(ev) != 1 || ev[0].SNI != "other.test" {
		t.Errorf("events %+v", ev)
	}
}

func TestProxyTunnelChecks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target func(r *rig) string
		ip     bool // policy lists 127.0.0.1 on the TLS port
		client func(c net.Conn, r *rig) error
		reason string
	}{
		{"no SNI to a name", func(r *rig) string { return hostPort("allowed.test", r.tls.port()) }, false,
			func(c net.Conn, r *rig) error {
				return tls.Client(c, &tls.Config{InsecureSkipVerify: true}).Handshake()
			}, ReasonSNIMissing},
		{"not TLS", func(r *rig) string { return hostPort("allowed.test", r.tls.port()) }, false,
			func(c net.Conn, r *rig) error {
				fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
				_, err := http.ReadResponse(bufio.NewReader(c), nil)
				return err
			}, ReasonNotTLS},
		{"listed IP without SNI", func(r *rig) string { return hostPort("127.0.0.1", r.tls.port()) }, true,
			func(c net.Conn, r *rig) error {
				return tls.Client(c, &tls.Config{ServerName: "127.0.0.1", RootCAs: r.pool}).Handshake()
			}, ""},
		{"listed IP with a server name", func(r *rig) string { return hostPort("127.0.0.1", r.tls.port()) }, true,
			func(c net.Conn, r *rig) error {
				return tls.Client(c, &tls.Config{ServerName: "allowed.test", RootCAs: r.pool}).Handshake()
			}, ReasonSNIMismatch},
		{"upper case SNI", func(r *rig) string { return hostPort("allowed.test", r.tls.port()) }, false,
			func(c net.Conn, r *rig) error {
				return tls.Client(c, &tls.Config{ServerName: "ALLOWED.test", RootCAs: r.pool}).Handshake()
			}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, nil)
			pol, _ := Parse(r.policy())
			if tc.ip {
				pol = newPolicy(append(pol.Rules(), Rule{Host: "127.0.0.1", Ports: []uint16{uint16(r.tls.port())}}), nil)
			}
			h, err := r.tp.Register(netip.MustParseAddr("127.0.0.1"), CallInfo{Owner: "o", CallID: "c", Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			c, resp := rawConnect(t, r.tp.addr, tc.target(r))
			if resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %d", resp.StatusCode)
			}
			err = tc.client(c, r)
			c.Close()
			r.tp.evs.wait(t, 1)
			a := only(t, h.Close())
			if tc.reason == "" {
				if err != nil || !a.Allowed || a.Reason != "" || r.tls.conns() != 1 {
					t.Errorf("want allowed: %v, %+v, %d server connections", err, a, r.tls.conns())
				}
				return
			}
			if err == nil || a.Allowed || a.Reason != tc.reason || r.tls.conns() != 0 {
				t.Errorf("want refused %s: client %v, %+v, %d server connections", tc.reason, err, a, r.tls.conns())
			}
		})
	}
}

func TestCheckHello(t *testing.T) {
	for _, tc := range []struct {
		host string
		h    hello
		want string
	}{
		{"allowed.test", hello{serverName: "allowed.test"}, ""},
		{"allowed.test", hello{serverName: "allowed.test."}, ""},
		{"allowed.test", hello{serverName: "other.test"}, ReasonSNIMismatch},
		{"allowed.test", hello{}, ReasonSNIMissing},
		{"allowed.test", hello{serverName: "allowed.test", ech: true}, ReasonECH},
		{"10.0.0.1", hello{}, ""},
		{"10.0.0.1", hello{serverName: "allowed.test"}, ReasonSNIMismatch},
	} {
		if got := checkHello(tc.host, &tc.h); got != tc.want {
			t.Errorf("checkHello(%s, %+v) = %q, want %q", tc.host, tc.h, got, tc.want)
		}
	}
}

func TestProxyPlainHTTPChecks(t *testing.T) {
	r := newRig(t, nil)
	h := r.tp.register(t, r.policy(), Caps{})
	port := r.plain.port()
	send := func(raw string) *http.Response {
		c, err := net.Dial("tcp", r.tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, raw)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		return resp
	}
	for _, tc := range []struct {
		raw    string
		status int
		reason string
	}{
		{fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: refused.test:%d\r\n\r\n", port, port), 403, ReasonHostMismatch},
		{fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", port), 403, ReasonHostMismatch},
		{fmt.Sprintf("GET https://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", r.tls.port(), r.tls.port()), 403, ReasonScheme},
		{"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400, ReasonBadRequest},
		{fmt.Sprintf("GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\nX-Big: %s\r\n\r\n", port, port, strings.Repeat("a", 40<<10)), 431, ReasonBadRequest},
		{fmt.Sprintf("GET http://ALLOWED.test:%d/ HTTP/1.1\r\nHost: Allowed.Test:%d\r\n\r\n", port, port), 200, ""},
	} {
		resp := send(tc.raw)
		if resp.StatusCode != tc.status || resp.Header.Get("X-Airlock-Egress") != tc.reason {
			b, _ := io.ReadAll(resp.Body)
			t.Errorf("%.80q: %d %q %q, want %d %q", tc.raw, resp.StatusCode, resp.Header.Get("X-Airlock-Egress"), b, tc.status, tc.reason)
		}
	}
	r.tp.evs.wait(t, 6)
	rec := h.Close()
	if r.plain.conns() != 1 || r.refused.conns() != 0 {
		t.Errorf("servers saw %d and %d connections, want 1 and 0", r.plain.conns(), r.refused.conns())
	}
	var reasons []string
	for _, a := range rec.Attempts {
		reasons = append(reasons, a.Reason)
	}
	if got := strings.Join(reasons, ","); got != "host_mismatch,host_mismatch,scheme,bad_request,bad_request," {
		t.Errorf("reasons %q", got)
	}
}

func TestProxyUpstreamSeesTheCheckedHost(t *testing.T) {
	r := newRig(t, nil)
	r.tp.register(t, r.policy(), Caps{})
	c, err := net.Dial("tcp", r.tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Two requests on one connection (keep-alive), the second with the
	// Host header left out: upstream gets Host from the URL's checked name.
	br := bufio.NewReader(c)
	for i, hdr := range []string{fmt.Sprintf("Host: allowed.test:%d\r\n", r.plain.port()), ""} {
		fmt.Fprintf(c, "GET http://allowed.test:%d/ HTTP/1.1\r\n%sProxy-Authorization: secret\r\n\r\n", r.plain.port(), hdr)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if want := fmt.Sprintf("hello from plain (host allowed.test:%d)", r.plain.port()); string(b) != want {
			t.Errorf("request %d: %q, want %q", i, b, want)
		}
	}
}

func TestProxyMethods(t *testing.T) {
	r := newRig(t, nil)
	echo := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		fmt.Fprintf(w, "%s %s", req.Method, b)
	}), nil)
	pol := r.policy(hostPort("allowed.test", echo.port())) + ";GET,HEAD,POST"
	h := r.tp.register(t, pol, Caps{})
	cl := r.tp.client(r.pool)
	url := fmt.Sprintf("http://allowed.test:%d/", echo.port())
	// A chunked request body and an answer with a length.
	pr, pw := io.Pipe()
	go func() { io.WriteString(pw, "data"); pw.Close() }()
	resp, err := cl.Post(url, "text/plain", pr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "POST data" {
		t.Errorf("POST: %q", b)
	}
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	resp, err = cl.Do(req)
	if err != nil || resp.StatusCode != 403 || resp.Header.Get("X-Airlock-Egress") != ReasonMethod {
		t.Errorf("DELETE: %v %v", resp, err)
	}
	if _, _, err := r.get(t, fmt.Sprintf("https://allowed.test:%d/", r.tls.port())); err == nil {
		t.Error("a tunnel went through while egress_methods does not name CONNECT")
	}
	r.tp.evs.wait(t, 3)
	rec := h.Close()
	got := []string{}
	for _, a := range rec.Attempts {
		got = append(got, a.Reason)
	}
	if strings.Join(got, ",") != ",method,tunnel" || echo.conns() != 1 || r.tls.conns() != 0 {
		t.Errorf("reasons %v, echo %d conns, tls %d conns", got, echo.conns(), r.tls.conns())
	}
	// With CONNECT in the list, tunnels go through.
	h = r.tp.register(t, r.policy()+";GET,CONNECT", Caps{})
	if code, _, err := r.get(t, fmt.Sprintf("https://allowed.test:%d/", r.tls.port())); err != nil || code != 200 {
		t.Errorf("tunnel with CONNECT listed: %d %v", code, err)
	}
	h.Close()
}

func TestProxyExpectContinue(t *testing.T) {
	r := newRig(t, nil)
	echo := newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		fmt.Fprintf(w, "got %s expect=%q", b, req.Header.Get("Expect"))
	}), nil)
	r.tp.register(t, hostPort("allowed.test", echo.port()), Caps{})
	c, err := net.Dial("tcp", r.tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PUT http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n", echo.port(), echo.port())
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, "100 Continue") {
		t.Fatalf("want 100 Continue first: %q %v", line, err)
	}
	br.ReadString('\n')
	io.WriteString(c, "body")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != `got body expect=""` {
		t.Errorf("answer %q", b)
	}
}

func TestProxyUnregisteredSource(t *testing.T) {
	r := newRig(t, nil)
	r.tp.register(t, r.policy(), Caps{}) // 127.0.0.1 runs a call; 127.0.0.2 does not
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	c, err := d.Dial("tcp", r.tp.addr)
	if err != nil {
		t.Skipf("cannot bind 127.0.0.2: %v", err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n", r.plain.port(), r.plain.port())
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 403 || resp.Header.Get("X-Airlock-Egress") != ReasonUnregistered {
		t.Errorf("unregistered source: %d %v", resp.StatusCode, resp.Header)
	}
	if r.plain.conns() != 0 {
		t.Error("an unregistered source reached the server")
	}
	evs := r.tp.evs.all()
	if len(evs) != 1 || evs[0].Owner != "" || evs[0].Reason != ReasonUnregistered || evs[0].Source != netip.MustParseAddr("127.0.0.2") {
		t.Errorf("events %+v", evs)
	}
}

func TestRegisterConflictAndAfterClose(t *testing.T) {
	r := newRig(t, nil)
	h := r.tp.register(t, r.policy(), Caps{})
	_, err := r.tp.Register(netip.MustParseAddr("::ffff:127.0.0.1"), CallInfo{Owner: "bob"})
	if !errors.Is(err, core.ErrConflict) {
		t.Errorf("second registration: %v", err)
	}
	h.Close()
	if code, _, err := r.get(t, fmt.Sprintf("http://allowed.test:%d/", r.plain.port())); err != nil || code != 403 {
		t.Errorf("after Close: %d %v, want 403", code, err)
	}
	if got := h.Close(); len(got.Attempts) != 0 {
		t.Errorf("a closed handle's record changed: %+v", got)
	}
}

// flipResolver answers allowed addresses and metadata in turn: DNS
// rebinding.
type flipResolver struct{ n atomic.Int64 }

func (f *flipResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if f.n.Add(1)%2 == 0 {
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// recordingDialer records the addresses it is asked to dial.
type recordingDialer struct {
	next  Dialer
	mu    sync.Mutex
	addrs []string
}

func (d *recordingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, addr)
	d.mu.Unlock()
	return d.next.DialContext(ctx, network, addr)
}

func TestProxyDNSRebinding(t *testing.T) {
	dialer := &recordingDialer{next: loopbackFence(t)}
	res := &flipResolver{}
	r := newRig(t, func(c *Config) { c.Resolver, c.Dialer = res, dialer })
	h := r.tp.register(t, r.policy(), Caps{})
	ok := 0
	for range 6 {
		if code, _, err := r.get(t, fmt.Sprintf("http://allowed.test:%d/", r.plain.port())); err == nil && code == 200 {
			ok++
		}
	}
	rec := h.Close()
	if ok != 3 || res.n.Load() != 6 {
		t.Errorf("%d of 6 went through with %d lookups; want 3 and one lookup per attempt", ok, res.n.Load())
	}
	for _, a := range dialer.addrs {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Errorf("dialed %s", a)
		}
	}
	refused := 0
	for _, a := range rec.Attempts {
		if a.Reason == ReasonMetadata {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("attempts %+v", rec.Attempts)
	}
}

func TestProxyConnectionCap(t *testing.T) {
	r := newRig(t, nil)
	h := r.tp.register(t, r.policy(), Caps{Connections: 2})
	var codes []int
	for range 3 {
		code, _, _ := r.get(t, fmt.Sprintf("http://allowed.test:%d/", r.plain.port()))
		codes = append(codes, code)
	}
	rec := h.Close()
	if fmt.Sprint(codes) != "[200 200 403]" || rec.Attempts[2].Reason != ReasonConnCap || r.plain.conns() != 2 {
		t.Errorf("codes %v, record %+v, server conns %d", codes, rec, r.plain.conns())
	}
}

// bigHandler streams n bytes.
func bigHandler(size int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		n := size
		w.Header().Set("Content-Length", fmt.Sprint(n))
		buf := make([]byte, 64<<10)
		for n > 0 {
			k := min(n, len(buf))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			n -= k
		}
	})
}

func TestProxyByteCap(t *testing.T) {
	cert, pool := testCert(t, "allowed.test")
	big := newTestServer(t, bigHandler(4<<20), nil)
	bigTLS := newTestServer(t, bigHandler(4<<20), &cert)
	tp := newTestProxy(t, nil)
	const limit = 256 << 10
	for _, tc := range []struct {
		url  string
		port int
	}{
		{fmt.Sprintf("http://allowed.test:%d/", big.port()), big.port()},
		{fmt.Sprintf("https://allowed.test:%d/", bigTLS.port()), bigTLS.port()},
	} {
		h := tp.register(t, hostPort("allowed.test", tc.port), Caps{Bytes: limit})
		resp, err := tp.client(pool).Get(tc.url)
		var n int64
		if err == nil {
			n, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		a := only(t, h.Close())
		if err == nil || n >= 4<<20 || !a.Allowed || a.Reason != ReasonByteCap || a.Bytes > limit+2*bufSize {
			t.Errorf("%s: read %d (%v), attempt %+v", tc.url, n, err, a)
		}
	}
}

// dripHandler writes a byte every 20 ms until the client goes away.
func dripHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		for {
			if _, err := w.Write([]byte("x")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-req.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
}

func TestProxyTimeCapAndCallEnd(t *testing.T) {
	cert, pool := testCert(t, "allowed.test")
	drip := newTestServer(t, dripHandler(), &cert)
	tp := newTestProxy(t, nil)
	url := fmt.Sprintf("https://allowed.test:%d/", drip.port())
	read := func() (time.Duration, error) {
		start := time.Now()
		resp, err := tp.client(pool).Get(url)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return time.Since(start), err
	}

	h := tp.register(t, hostPort("allowed.test", drip.port()), Caps{Time: 500 * time.Millisecond})
	took, err := read()
	a := only(t, h.Close())
	if err == nil || took > testscale.D(5*time.Second) || a.Reason != ReasonTimeCap || !a.Allowed || a.Bytes == 0 {
		t.Errorf("time cap: %v after %v, %+v", err, took, a)
	}

	h = tp.register(t, hostPort("allowed.test", drip.port()), Caps{})
	go func() { time.Sleep(300 * time.Millisecond); h.Close() }()
	took, err = read()
	a = only(t, h.Close())
	if err == nil || took > testscale.D(5*time.Second) || a.Reason != ReasonCallEnded {
		t.Errorf("call end: %v after %v, %+v", err, took, a)
	}
}

func TestProxyIdleTimeout(t *testing.T) {
	r := newRig(t, func(c *Config) { c.IdleTimeout = 300 * time.Millisecond })
	h := r.tp.register(t, r.policy(), Caps{})
	c, resp := rawConnect(t, r.tp.addr, hostPort("allowed.test", r.tls.port()))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "allowed.test", RootCAs: r.pool})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := tc.Read(make([]byte, 1))
	if err == nil || time.Since(start) > testscale.D(5*time.Second) {
		t.Errorf("idle tunnel: read %v after %v", err, time.Since(start))
	}
	if a := only(t, h.Close()); a.Reason != ReasonIdle || !a.Allowed {
		t.Errorf("attempt %+v", a)
	}
}

func TestProxyDialFailure(t *testing.T) {
	r := newRig(t, nil)
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there now
	h := r.tp.register(t, hostPort("allowed.test", port), Caps{})
	code, _, err := r.get(t, fmt.Sprintf("http://allowed.test:%d/", port))
	if err != nil || code != http.StatusBadGateway {
		t.Errorf("%d %v, want 502", code, err)
	}
	if a := only(t, h.Close()); !a.Allowed || a.Reason != ReasonDial {
		t.Errorf("attempt %+v", a)
	}
}

func TestProxyRecordBound(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxRecorded = 3 })
	h := r.tp.register(t, r.policy(), Caps{})
	for range 5 {
		r.get(t, fmt.Sprintf("http://refused.test:%d/", r.refused.port()))
	}
	rec := h.Close()
	if len(rec.Attempts) != 3 || rec.Omitted != 2 {
		t.Errorf("record %+v, want 3 kept and 2 omitted", rec)
	}
}

func TestProxyBusy(t *testing.T) {
	r := newRig(t, func(c *Config) { c.MaxConns = 1 })
	h := r.tp.register(t, r.policy(), Caps{})
	hold, err := net.Dial("tcp", r.tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	deadline := time.Now().Add(testscale.D(5 * time.Second))
	for time.Now().Before(deadline) && testutil.ToFloat64(r.tp.metrics.open) < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	code, _, err := r.get(t, fmt.Sprintf("http://allowed.test:%d/", r.plain.port()))
	if err != nil || code != http.StatusServiceUnavailable {
		t.Errorf("%d %v, want 503", code, err)
	}
	r.tp.evs.wait(t, 1)
	if a := only(t, h.Close()); a.Allowed || a.Reason != ReasonBusy || a.Host != "allowed.test" {
		t.Errorf("attempt %+v", a)
	}
}

func TestNewNeedsGuard(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("New without a guard: %v", err)
	}
}

func TestProxyCloseCutsTunnels(t *testing.T) {
	cert, pool := testCert(t, "allowed.test")
	drip := newTestServer(t, dripHandler(), &cert)
	tp := newTestProxy(t, nil)
	h := tp.register(t, hostPort("allowed.test", drip.port()), Caps{})
	go func() { time.Sleep(300 * time.Millisecond); tp.Close() }()
	start := time.Now()
	resp, err := tp.client(pool).Get(fmt.Sprintf("https://allowed.test:%d/", drip.port()))
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err == nil || time.Since(start) > testscale.D(5*time.Second) {
		t.Errorf("tunnel after the proxy's Close: %v after %v", err, time.Since(start))
	}
	tp.evs.wait(t, 1)
	if a := only(t, h.Close()); !a.Allowed || a.Reason != ReasonClosed {
		t.Errorf("attempt %+v", a)
	}
}
