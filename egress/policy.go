package egress

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// defaultPorts are the ports of an entry that names none: HTTP and HTTPS.
var defaultPorts = []uint16{80, 443}

// Policy is what one call may reach: host rules with their ports and,
// optionally, the HTTP methods it may use. The zero Policy allows nothing
// (no network, the default). A Policy is immutable and canonical: its rules
// are sorted, one per host, so two policies that allow the same thing have
// the same String and Hash.
type Policy struct {
	rules   []Rule
	methods []string // sorted, upper case; nil: any method
	// packages are the Python package names the policy allows (PEP 503
	// normal forms, sorted; nil: any; packages.go).
	packages []string
}

// Rule is one destination of a Policy: a host name ("pypi.internal"), a
// suffix pattern ("*.data.example": every name under data.example, not
// data.example itself) or an IP address ("10.1.2.3", "fd00::5"), with the
// ports it may be reached on (sorted).
type Rule struct {
	Host  string
	Ports []uint16
}

// wildcard reports whether r is a "*.suffix" pattern.
func (r Rule) wildcard() bool { return strings.HasPrefix(r.Host, "*.") }

// matches reports whether host (normalized: lower case, no trailing dot; an
// IP address in its netip form) falls under r's host pattern.
func (r Rule) matches(host string) bool {
	if r.wildcard() {
		suffix := r.Host[1:] // ".data.example"
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix) && !isIPHost(host)
	}
	return r.Host == host
}

// Rules returns the policy's rules (a copy).
func (p Policy) Rules() []Rule {
	out := make([]Rule, len(p.rules))
	for i, r := range p.rules {
		out[i] = Rule{Host: r.Host, Ports: slices.Clone(r.Ports)}
	}
	return out
}

// Methods returns the HTTP methods the policy allows, or nil when it does
// not restrict them.
func (p Policy) Methods() []string { return slices.Clone(p.methods) }

// Empty reports whether the policy allows no destination at all: a call
// with an empty policy keeps its container off every network.
func (p Policy) Empty() bool { return len(p.rules) == 0 }

// Allows reports whether host (a name or an IP address, any case, an
// optional trailing dot) on port is a destination of the policy. It says
// nothing about the addresses the name resolves to: the Guard checks those.
func (p Policy) Allows(host string, port int) bool {
	h, ok := normalizeDest(host)
	if !ok || port <= 0 || port > 65535 {
		return false
	}
	for _, r := range p.rules {
		if r.matches(h) && slices.Contains(r.Ports, uint16(port)) {
			return true
		}
	}
	return false
}

// AllowsMethod reports whether a plain HTTP request with method may go out.
// A policy without egress_methods allows every method.
func (p Policy) AllowsMethod(method string) bool {
	return p.methods == nil || slices.Contains(p.methods, method)
}

// Tunnels reports whether the policy allows CONNECT tunnels, whose requests
// the proxy cannot read: always without egress_methods, and with it only
// when the list names CONNECT (the operator accepts that methods inside
// TLS tunnels are not enforced).
func (p Policy) Tunnels() bool { return p.AllowsMethod("CONNECT") }

// String returns the canonical form: every (host, port) as "host:port"
// (IPv6 as "[addr]:port"), sorted and comma-separated, then ";" and the
// methods when the policy restricts them, then ";pip=" and the package
// names when it restricts those. Parse(p.String()) equals p; the empty
// policy is "".
func (p Policy) String() string {
	var b strings.Builder
	for _, r := range p.rules {
		host := r.Host
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		for _, port := range r.Ports {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(host)
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(int(port)))
		}
	}
	if p.methods != nil {
		b.WriteByte(';')
		b.WriteString(strings.Join(p.methods, ","))
	}
	if p.packages != nil {
		b.WriteString(";pip=")
		b.WriteString(strings.Join(p.packages, ","))
	}
	return b.String()
}

// Hash returns 16 hex digits of the SHA-256 of the canonical form: the key
// that pools containers per policy.
func (p Policy) Hash() string {
	sum := sha256.Sum256([]byte(p.String()))
	return hex.EncodeToString(sum[:8])
}

// Equal reports whether p and q allow exactly the same destinations and
// methods.
func (p Policy) Equal(q Policy) bool { return p.String() == q.String() }

// MarshalText encodes the policy in its canonical form, so that it can
// travel with a job as a JSON string.
func (p Policy) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText decodes the canonical form (see Parse).
func (p *Policy) UnmarshalText(b []byte) error {
	q, err := Parse(string(b))
	if err != nil {
		return err
	}
	*p = q
	return nil
}

// newPolicy builds the canonical policy from rules (any order, hosts may
// repeat) and methods (nil: any).
func newPolicy(rules []Rule, methods []string) Policy {
	byHost := map[string][]uint16{}
	for _, r := range rules {
		byHost[r.Host] = append(byHost[r.Host], r.Ports...)
	}
	p := Policy{rules: make([]Rule, 0, len(byHost))}
	for host, ports := range byHost {
		slices.Sort(ports)
		p.rules = append(p.rules, Rule{Host: host, Ports: slices.Compact(ports)})
	}
	slices.SortFunc(p.rules, func(a, b Rule) int { return strings.Compare(a.Host, b.Host) })
	if methods != nil {
		m := slices.Clone(methods)
		slices.Sort(m)
		p.methods = slices.Compact(m)
	}
	return p
}

// normalizeDest turns a destination host as a client wrote it into the form
// rules hold: an IP address (brackets and IPv4-mapping removed) in netip's
// form, else the name in lower case without a trailing dot.
func normalizeDest(host string) (string, bool) {
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", false
		}
		return a.Unmap().String(), true
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" || len(h) > 253 {
		return "", false
	}
	return h, true
}

// isIPHost reports whether a normalized destination is an IP address.
func isIPHost(h string) bool {
	_, err := netip.ParseAddr(h)
	return err == nil
}
