package egress

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/core"
)

// Address classes the Guard refuses, by the reason it records.
var (
	// metadataAddrs are the cloud instance-metadata and platform endpoints:
	// never reachable, whatever the operator allows.
	metadataAddrs = []netip.Prefix{
		netip.MustParsePrefix("169.254.169.254/32"), // AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle
		netip.MustParsePrefix("169.254.170.2/32"),   // AWS ECS task metadata
		netip.MustParsePrefix("169.254.169.123/32"), // AWS time sync
		netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud
		netip.MustParsePrefix("168.63.129.16/32"),   // Azure WireServer
		netip.MustParsePrefix("192.0.0.192/32"),     // Oracle Cloud (legacy)
		netip.MustParsePrefix("fd00:ec2::/32"),      // AWS IPv6 (IMDS fd00:ec2::254, DNS, NTP)
		netip.MustParsePrefix("fd20:ce::254/128"),   // GCP IPv6 metadata
	}
	// privateRanges are the ranges an operator may allow (internal mirrors):
	// RFC 1918, shared address space (RFC 6598) and unique local IPv6.
	privateRanges = []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"),
		netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("fc00::/7"),
	}
	// reservedRanges are special-purpose ranges that are neither private nor
	// public destinations (IANA special-purpose registries).
	reservedRanges = []netip.Prefix{
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // documentation
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // documentation
		netip.MustParsePrefix("203.0.113.0/24"),  // documentation
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, broadcast
		netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
		netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
		netip.MustParsePrefix("100::/64"),        // discard-only
		netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo, ORCHID, ...)
		netip.MustParsePrefix("2001:db8::/32"),   // documentation
		netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
	}
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // embeds an IPv4 address in its last 32 bits
	sixToFour = netip.MustParsePrefix("2002::/16")    // embeds an IPv4 address in bits 16-48
	thisNet   = netip.MustParsePrefix("0.0.0.0/8")
)

// Guard decides which IP addresses the proxy and the fetcher may connect
// to. It refuses, always: loopback, the host's own addresses, unspecified,
// link-local, multicast and broadcast, reserved ranges and cloud metadata
// endpoints (169.254.169.254, fd00:ec2::254, ...), in every spelling
// (IPv4-mapped IPv6, NAT64 and 6to4 forms are checked as the IPv4 address
// they carry). Private addresses (RFC 1918, 100.64/10, fc00::/7) are
// refused unless they fall in a range the operator allowed. Everything
// else (public unicast) is allowed.
type Guard struct {
	allow    []netip.Prefix
	loopback bool // only AllowLoopbackForTest sets it

	localAddrs func() ([]netip.Addr, error)
	mu         sync.Mutex
	local      []netip.Addr
	localAt    time.Time
}

// localTTL is how long the host's own addresses are cached.
const localTTL = time.Second

// NewGuard returns a Guard that also allows the private ranges in allow
// (the operator's --egress-allow-cidr, e.g. the subnet of an internal
// package mirror). A range that is not inside a private range — loopback,
// metadata, link-local, public — is refused with core.ErrInvalid naming
// it.
func NewGuard(allow []netip.Prefix) (*Guard, error) {
	g := &Guard{localAddrs: interfaceAddrs}
	for _, p := range allow {
		if !p.IsValid() {
			return nil, fmt.Errorf("egress allowed range %q: not a CIDR: %w", p, core.ErrInvalid)
		}
		p = p.Masked()
		if p.Addr().Is4In6() {
			return nil, fmt.Errorf("egress allowed range %s: write IPv4 ranges as a.b.c.d/n: %w", p, core.ErrInvalid)
		}
		if !slices.ContainsFunc(privateRanges, func(r netip.Prefix) bool { return r.Bits() <= p.Bits() && r.Contains(p.Addr()) }) {
			return nil, fmt.Errorf("egress allowed range %s: only private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) may be allowed: %w", p, core.ErrInvalid)
		}
		g.allow = append(g.allow, p)
	}
	return g, nil
}

// ParseCIDRs parses comma-separated CIDRs (the operator flag's value) for
// NewGuard.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range splitList(s) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("egress allowed range %q: %v: %w", f, err, core.ErrInvalid)
		}
		out = append(out, p)
	}
	return out, nil
}

// Check returns "" when the proxy may connect to a, else the reason it may
// not (a Reason* value).
func (g *Guard) Check(a netip.Addr) string {
	if !a.IsValid() {
		return ReasonReserved
	}
	a = a.WithZone("").Unmap()
	if embedded, ok := embeddedIPv4(a); ok {
		a = embedded
	}
	if r := neverAllowed(a); r != "" {
		if r == ReasonLoopback && g.loopback {
			return ""
		}
		return r
	}
	if g.isLocal(a) {
		return ReasonLocal
	}
	if slices.ContainsFunc(privateRanges, func(p netip.Prefix) bool { return p.Contains(a) }) {
		if slices.ContainsFunc(g.allow, func(p netip.Prefix) bool { return p.Contains(a) }) {
			return ""
		}
		return ReasonPrivate
	}
	return ""
}

// neverAllowed returns the reason an address (unmapped) can never be a
// destination, whatever the operator allows, or "".
func neverAllowed(a netip.Addr) string {
	if embedded, ok := embeddedIPv4(a); ok {
		a = embedded
	}
	switch {
	case slices.ContainsFunc(metadataAddrs, func(p netip.Prefix) bool { return p.Contains(a) }):
		return ReasonMetadata
	case a.IsLoopback():
		return ReasonLoopback
	case a.IsUnspecified() || thisNet.Contains(a):
		return ReasonUnspecified
	case a.IsLinkLocalUnicast():
		return ReasonLinkLocal
	case a.IsMulticast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast():
		return ReasonMulticast
	case slices.ContainsFunc(reservedRanges, func(p netip.Prefix) bool { return p.Contains(a) }):
		return ReasonReserved
	}
	return ""
}

// embeddedIPv4 returns the IPv4 address a NAT64 (64:ff9b::/96) or 6to4
// (2002::/16) address carries: the address the packet would reach.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// isLocal reports whether a is one of this host's own addresses (the proxy
// must not lead a sandbox to the host's services).
func (g *Guard) isLocal(a netip.Addr) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if time.Since(g.localAt) > localTTL {
		addrs, err := g.localAddrs()
		if err == nil {
			g.local, g.localAt = addrs, time.Now()
		}
	}
	return slices.Contains(g.local, a)
}

// interfaceAddrs lists the host's interface addresses.
func interfaceAddrs() ([]netip.Addr, error) {
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("egress: interface addresses: %w", err)
	}
	out := make([]netip.Addr, 0, len(ifs))
	for _, ia := range ifs {
		if n, ok := ia.(*net.IPNet); ok {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, a.Unmap())
			}
		}
	}
	return out, nil
}
