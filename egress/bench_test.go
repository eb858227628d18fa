package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// proxyProcessEnv makes the test binary a bare proxy process (see
// TestProxyProcess): its value is the policy to register 127.0.0.1 with.
const proxyProcessEnv = "AIRLOCK_EGRESS_PROXY_PROCESS"

// TestProxyProcess is not a test: BenchmarkEgressFigures runs the test
// binary with proxyProcessEnv set to get a proxy in a process of its own,
// whose CPU time it can read. It prints "ADDR host:port" and serves until
// its stdin closes.
func TestProxyProcess(t *testing.T) {
	pol := os.Getenv(proxyProcessEnv)
	if pol == "" {
		t.Skip("helper process for BenchmarkEgressFigures")
	}
	tp := newTestProxy(t, func(c *Config) {
		c.Resolver = &StaticResolver{Hosts: map[string][]netip.Addr{"bench.test": {netip.MustParseAddr("127.0.0.1")}}}
		c.Audit, c.Registerer = nil, nil
	})
	tp.register(t, pol, Caps{Bytes: 1 << 40})
	// A door too: the path a sandbox's traffic takes (a unix socket).
	d, err := tp.OpenDoor(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	p, err := Parse(pol)
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.Register(CallInfo{Owner: "bench", CallID: "bench-door", Policy: p, Caps: Caps{Bytes: 1 << 40}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	fmt.Printf("DOOR %s\n", d.Path())
	fmt.Printf("ADDR %s\n", tp.addr)
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// proxyProcess starts the proxy process for a policy and returns its
// address, its door's socket and its pid.
func proxyProcess(b *testing.B, pol string) (string, string, int) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestProxyProcess$", "-test.v")
	cmd.Env = append(os.Environ(), proxyProcessEnv+"="+pol)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stdout)
	door := ""
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "DOOR "); ok {
			door = p
		}
		if addr, ok := strings.CutPrefix(sc.Text(), "ADDR "); ok {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return addr, door, cmd.Process.Pid
		}
	}
	b.Fatalf("proxy process gave no address: %v", sc.Err())
	return "", "", 0
}

// processCPU returns a process's user+system CPU time from /proc.
func processCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may hold spaces): state is
	// field 3; utime and stime are fields 14 and 15, in clock ticks
	// (100 per second on Linux).
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// BenchmarkEgressFigures measures what the proxy costs, for make bench:
// a large HTTPS download (100 MiB, or AIRLOCK_EGRESS_BENCH_MIB) through
// the proxy (a CONNECT tunnel, its own process) against the same download
// straight on loopback, interleaved, reporting both throughputs, their
// ratio and the proxy's CPU time per MiB, and the same through a door (the
// unix socket a sandbox's controller relays to); then the latency a small HTTPS
// request gains through the proxy, on a new connection each time (a TLS
// handshake through a new tunnel) and on a reused one. Run it with
//
//	go test -run '^$' -bench EgressFigures -benchtime 3x ./egress/
func BenchmarkEgressFigures(b *testing.B) {
	size := 100 << 20
	if v := os.Getenv("AIRLOCK_EGRESS_BENCH_MIB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("AIRLOCK_EGRESS_BENCH_MIB=%q", v)
		}
		size = n << 20
	}
	cert, pool := testCert(b, "bench.test")
	mux := http.NewServeMux()
	mux.Handle("/big", bigHandler(size))
	mux.Handle("/small", greet("bench"))
	srv := newTestServer(b, mux, &cert)
	proxyAddr, doorPath, pid := proxyProcess(b, hostPort("bench.test", srv.port()))

	direct := func(keep bool) *http.Client {
		return &http.Client{Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool},
			DisableKeepAlives: !keep,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer // bench.test is 127.0.0.1, like curl --resolve
				return d.DialContext(ctx, network, hostPort("127.0.0.1", srv.port()))
			},
		}}
	}
	proxied := func(keep bool) *http.Client {
		u, _ := url.Parse("http://" + proxyAddr)
		return &http.Client{Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool},
			DisableKeepAlives: !keep,
			Proxy:             http.ProxyURL(u),
		}}
	}
	// Through the door: the unix socket a sandbox's controller relays to.
	viaDoor := func(keep bool) *http.Client {
		return &http.Client{Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool},
			DisableKeepAlives: !keep,
			Proxy:             http.ProxyURL(&url.URL{Scheme: "http", Host: "door.invalid:3128"}),
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", doorPath)
			},
		}}
	}
	bigURL := fmt.Sprintf("https://bench.test:%d/big", srv.port())
	download := func(c *http.Client) time.Duration {
		n, took := timedGet(b, c, bigURL)
		if n != int64(size) {
			b.Fatalf("downloaded %d of %d", n, size)
		}
		return took
	}

	var tDirect, tProxy, tDoor, cpu, cpuDoor time.Duration
	b.ResetTimer()
	for range b.N {
		tDirect += download(direct(false))
		before := processCPU(b, pid)
		tProxy += download(proxied(false))
		cpu += processCPU(b, pid) - before
		before = processCPU(b, pid)
		tDoor += download(viaDoor(false))
		cpuDoor += processCPU(b, pid) - before
	}
	b.StopTimer()
	mib := float64(size) / (1 << 20) * float64(b.N)
	b.ReportMetric(mib/tDirect.Seconds(), "direct-MiB/s")
	b.ReportMetric(mib/tProxy.Seconds(), "proxy-MiB/s")
	b.ReportMetric(tDirect.Seconds()/tProxy.Seconds(), "throughput-ratio")
	b.ReportMetric(float64(cpu.Microseconds())/1000/mib, "proxy-cpu-ms/MiB")
	b.ReportMetric(mib/tDoor.Seconds(), "door-MiB/s")
	b.ReportMetric(tDirect.Seconds()/tDoor.Seconds(), "door-throughput-ratio")
	b.ReportMetric(float64(cpuDoor.Microseconds())/1000/mib, "door-cpu-ms/MiB")

	smallURL := fmt.Sprintf("https://bench.test:%d/small", srv.port())
	request := func(c *http.Client) time.Duration {
		_, took := timedGet(b, c, smallURL)
		return took
	}
	const rounds = 50
	for _, keep := range []bool{false, true} {
		dc, pc := direct(keep), proxied(keep)
		request(dc) // warm: a reused connection exists from here on
		request(pc)
		var d, p []time.Duration
		for range rounds {
			d = append(d, request(dc))
			p = append(p, request(pc))
		}
		name := "added-ms/new-conn"
		if keep {
			name = "added-ms/reused-conn"
		}
		b.ReportMetric(float64((median(p)-median(d)).Microseconds())/1000, name)
		b.ReportMetric(float64(median(d).Microseconds())/1000, strings.Replace(name, "added", "direct", 1))
		if !keep {
			vc := viaDoor(false)
			var v []time.Duration
			for range rounds {
				v = append(v, request(vc))
			}
			b.ReportMetric(float64((median(v)-median(d)).Microseconds())/1000, "door-added-ms/new-conn")
		}
	}
}

// timedGet reads url's body with c and returns its size and the time it
// took.
func timedGet(b *testing.B, c *http.Client, url string) (int64, time.Duration) {
	start := time.Now()
	resp, err := c.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return n, time.Since(start)
}

// median returns the middle of ds.
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
