package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// Resolver turns a host name into addresses; *net.Resolver is one. The
// proxy and the fetcher resolve every name themselves and check each
// address with the Guard, so what a sandbox's own DNS would say never
// matters.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens TCP connections; *net.Dialer is one. It is only ever given
// an address the Guard allowed ("ip:port"), never a name.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// StaticResolver answers names from a fixed table, like curl --resolve or
// the operator's --egress-resolve flag, and passes other names to Next
// (nil: they do not resolve). Names are matched in lower case without a
// trailing dot.
type StaticResolver struct {
	Hosts map[string][]netip.Addr
	Next  Resolver
}

// LookupNetIP returns the table's addresses for host, else Next's answer.
func (r *StaticResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if addrs, ok := r.Hosts[name]; ok {
		var out []netip.Addr
		for _, a := range addrs {
			if network == "ip" || network == "ip4" && a.Is4() || network == "ip6" && a.Is6() {
				out = append(out, a)
			}
		}
		if len(out) > 0 {
			return out, nil
		}
	}
	if r.Next != nil {
		return r.Next.LookupNetIP(ctx, network, host)
	}
	return nil, &net.DNSError{Err: "no such host (not in the static table)", Name: host, IsNotFound: true}
}

// ParseResolve parses "name=address" entries (the operator's
// --egress-resolve, comma-separated) into a StaticResolver table; a name
// may repeat to give several addresses. Bad entries are refused with
// core.ErrInvalid naming them.
func ParseResolve(s string) (map[string][]netip.Addr, error) {
	out := map[string][]netip.Addr{}
	for _, e := range splitList(s) {
		name, addr, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("egress resolve entry %q: want name=address: %w", e, core.ErrInvalid)
		}
		n, err := canonicalName(strings.TrimSpace(name))
		if err != nil || strings.HasPrefix(n, "*.") {
			return nil, fmt.Errorf("egress resolve entry %q: not a host name: %w", e, core.ErrInvalid)
		}
		a, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(addr), "[]"))
		if err != nil {
			return nil, fmt.Errorf("egress resolve entry %q: %v: %w", e, err, core.ErrInvalid)
		}
		out[n] = append(out[n], a.Unmap())
	}
	return out, nil
}
