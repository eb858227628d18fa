package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// netPath is the way out the proxy and the fetcher share: resolve a
// destination with the operator's resolver, check every address with the
// Guard, connect only to an address that passed.
type netPath struct {
	guard       *Guard
	resolver    Resolver
	dialer      Dialer
	dialTimeout time.Duration
}

// resolve returns the addresses of host (a normalized name or IP address)
// that the Guard allows, or the reason there is none: ReasonResolve when
// the name does not resolve, else the Guard's reason for the first
// address.
func (n *netPath) resolve(ctx context.Context, host string) ([]netip.Addr, string) {
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ctx, cancel := context.WithTimeout(ctx, n.dialTimeout)
		defer cancel()
		addrs, err = n.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return nil, ReasonResolve
		}
	}
	var ok []netip.Addr
	first := ""
	for _, a := range addrs {
		a = a.Unmap()
		if r := n.guard.Check(a); r != "" {
			if first == "" {
				first = r
			}
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return nil, first
	}
	return ok, ""
}

// dial connects to port on the first of addrs (all checked by resolve)
// that answers, within the dial timeout.
func (n *netPath) dial(ctx context.Context, addrs []netip.Addr, port int) (net.Conn, netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, n.dialTimeout)
	defer cancel()
	var errs []error
	for _, a := range addrs {
		c, err := n.dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, a, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, netip.Addr{}, fmt.Errorf("egress: dial port %s: %w", strconv.Itoa(port), errors.Join(errs...))
}
