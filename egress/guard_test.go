package egress

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

func TestGuardCheck(t *testing.T) {
	g, err := NewGuard([]netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("fd12::/16")})
	if err != nil {
		t.Fatal(err)
	}
	g.localAddrs = func() ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("10.20.0.1"), netip.MustParseAddr("93.184.216.1")}, nil
	}
	for _, tc := range []struct {
		addr, want string
	}{
		{"93.184.216.34", ""},
		{"2606:2800:220:1::1", ""},
		{"10.20.3.4", ""},              // operator-allowed private range
		{"::ffff:10.20.3.4", ""},       // the same, IPv4-mapped
		{"fd12::5", ""},                // operator-allowed ULA
		{"10.21.0.1", ReasonPrivate},   // private, not allowed
		{"172.16.5.5", ReasonPrivate},  //
		{"192.168.1.1", ReasonPrivate}, //
		{"100.64.0.1", ReasonPrivate},  // shared address space
		{"fd13::1", ReasonPrivate},     // ULA, not allowed
		{"10.20.0.1", ReasonLocal},     // the host's own address, inside the allowed range
		{"93.184.216.1", ReasonLocal},  // the host's own public address
		{"127.0.0.1", ReasonLoopback},  //
		{"127.8.9.10", ReasonLoopback}, //
		{"::1", ReasonLoopback},        //
		{"::ffff:127.0.0.1", ReasonLoopback},
		{"64:ff9b::7f00:1", ReasonLoopback}, // NAT64 form of 127.0.0.1
		{"2002:7f00:1::1", ReasonLoopback},  // 6to4 form of 127.0.0.1
		{"64:ff9b::a14:304", ""},            // NAT64 form of 10.20.3.4 (allowed)
		{"64:ff9b::5db8:d822", ""},          // NAT64 form of a public address
		{"169.254.169.254", ReasonMetadata}, //
		{"::ffff:169.254.169.254", ReasonMetadata},
		{"64:ff9b::a9fe:a9fe", ReasonMetadata},                   // NAT64 form of the metadata address
		{"2002:a9fe:a9fe::1", ReasonMetadata},                    // 6to4 form
		{"fd00:ec2::254", ReasonMetadata},                        // AWS IPv6 IMDS
		{"fd20:ce::254", ReasonMetadata},                         // GCP IPv6
		{"100.100.100.200", ReasonMetadata},                      // Alibaba
		{"168.63.129.16", ReasonMetadata},                        // Azure WireServer (a public address)
		{"169.254.1.1", ReasonLinkLocal},                         //
		{"fe80::1", ReasonLinkLocal},                             //
		{"fe80::1%eth0", ReasonLinkLocal},                        //
		{"0.0.0.0", ReasonUnspecified},                           //
		{"0.1.2.3", ReasonUnspecified},                           //
		{"::", ReasonUnspecified},                                //
		{"224.0.0.251", ReasonMulticast},                         //
		{"239.1.1.1", ReasonMulticast},                           //
		{"ff02::1", ReasonMulticast},                             //
		{"255.255.255.255", ReasonReserved},                      // broadcast
		{"240.0.0.1", ReasonReserved},                            //
		{"192.0.2.10", ReasonReserved},                           // documentation
		{"198.18.0.1", ReasonReserved},                           // benchmarking
		{"2001:db8::1", ReasonReserved},                          //
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", ReasonReserved}, // Teredo
		{"::10.0.0.1", ReasonReserved},                           // IPv4-compatible
		{"fec0::1", ReasonReserved},                              // site-local
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := g.Check(a); got != tc.want {
			t.Errorf("Check(%s) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := g.Check(netip.Addr{}); got == "" {
		t.Error("the invalid address passed")
	}
}

func TestGuardDefaultRefusesAllPrivate(t *testing.T) {
	g, err := NewGuard(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"10.0.0.1", "172.17.0.2", "192.168.0.1", "fd00::1", "127.0.0.1", "169.254.169.254"} {
		if g.Check(netip.MustParseAddr(a)) == "" {
			t.Errorf("default guard allows %s", a)
		}
	}
}

func TestNewGuardRefusesNonPrivateRanges(t *testing.T) {
	for _, cidr := range []string{"127.0.0.0/8", "0.0.0.0/0", "169.254.0.0/16", "169.254.169.254/32",
		"8.8.8.0/24", "::/0", "fe80::/10", "10.0.0.0/7", "::ffff:10.0.0.0/104", "224.0.0.0/4"} {
		_, err := NewGuard([]netip.Prefix{netip.MustParsePrefix(cidr)})
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("NewGuard(%s) = %v, want ErrInvalid", cidr, err)
		}
	}
	// A metadata address inside an allowed private range stays refused.
	g, err := NewGuard([]netip.Prefix{netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("fd00::/8")})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"100.100.100.200", "fd00:ec2::254"} {
		if got := g.Check(netip.MustParseAddr(a)); got != ReasonMetadata {
			t.Errorf("Check(%s) inside an allowed range = %q, want metadata", a, got)
		}
	}
}

func TestLoopbackOnlyThroughTheTestHook(t *testing.T) {
	g, _ := NewGuard([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	lo := netip.MustParseAddr("127.0.0.1")
	if g.Check(lo) != ReasonLoopback {
		t.Fatal("a production guard allows loopback")
	}
	AllowLoopbackForTest(t, g)
	if g.Check(lo) != "" || g.Check(netip.MustParseAddr("::ffff:127.0.0.1")) != "" {
		t.Error("the test hook did not allow loopback")
	}
	if g.Check(netip.MustParseAddr("169.254.169.254")) != ReasonMetadata {
		t.Error("the test hook must not allow metadata")
	}
}

func TestParseCIDRsAndResolve(t *testing.T) {
	ps, err := ParseCIDRs("10.1.0.0/16, fd00::/8")
	if err != nil || len(ps) != 2 {
		t.Fatalf("ParseCIDRs = %v, %v", ps, err)
	}
	if _, err := ParseCIDRs("10.1.0.0/16,nope"); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("bad CIDR: %v", err)
	}
	table, err := ParseResolve("pypi.internal=10.1.2.3, PyPI.internal=fd00::3,files.internal=[fd00::4]")
	if err != nil {
		t.Fatal(err)
	}
	if len(table["pypi.internal"]) != 2 || table["files.internal"][0] != netip.MustParseAddr("fd00::4") {
		t.Errorf("ParseResolve = %v", table)
	}
	for _, bad := range []string{"pypi.internal", "*.x.example=10.0.0.1", "a.example=nope"} {
		if _, err := ParseResolve(bad); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("ParseResolve(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	r := &StaticResolver{Hosts: table}
	got, err := r.LookupNetIP(t.Context(), "ip4", "PYPI.internal.")
	if err != nil || len(got) != 1 || got[0] != netip.MustParseAddr("10.1.2.3") {
		t.Errorf("lookup = %v, %v", got, err)
	}
	if _, err := r.LookupNetIP(t.Context(), "ip", "unknown.example"); err == nil {
		t.Error("a name not in the table resolved")
	}
}
