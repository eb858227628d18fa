package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"github.com/airlock-dev/airlock/core"
)

// knownMethods lists the HTTP methods an egress_methods list may name. CONNECT
// in the list allows TLS tunnels, inside which methods cannot be seen.
var knownMethods = []string{"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT"}

// EntryError is a bad entry of an egress list: it names the entry and says
// what is wrong with it. It carries core.ErrInvalid.
type EntryError struct {
	Entry  string // the entry as written
	Reason string // what is wrong
}

// Error returns `egress entry "ENTRY": REASON`.
func (e *EntryError) Error() string { return fmt.Sprintf("egress entry %q: %s", e.Entry, e.Reason) }

// Unwrap makes errors.Is(err, core.ErrInvalid) hold.
func (e *EntryError) Unwrap() error { return core.ErrInvalid }

// ParseHosts parses the value of a keys-file egress= field: comma-separated
// entries, each a host name ("pypi.internal"), a suffix pattern
// ("*.data.example") or an IP address ("10.1.2.3", "[fd00::5]"), with an
// optional port (":8443"; without one the entry allows 80 and 443). The
// empty string is the empty policy. The first bad entry is an *EntryError.
func ParseHosts(s string) (Policy, error) {
	if strings.TrimSpace(s) == "" {
		return Policy{}, nil
	}
	return ParseList(strings.Split(s, ","))
}

// ParseList parses entries of an egress list one by one (as ParseHosts
// does for each comma-separated entry): the form of an environment spec's
// egress: list.
func ParseList(entries []string) (Policy, error) {
	rules := make([]Rule, 0, len(entries))
	for _, e := range entries {
		r, err := parseEntry(e)
		if err != nil {
			return Policy{}, err
		}
		rules = append(rules, r)
	}
	return newPolicy(rules, nil), nil
}

// ParseMethods parses the value of a keys-file egress_methods= field
// ("GET,HEAD"; any case) into a method list for WithMethods.
func ParseMethods(s string) ([]string, error) {
	var out []string
	for _, m := range strings.Split(s, ",") {
		name := strings.ToUpper(strings.TrimSpace(m))
		if !slices.Contains(knownMethods, name) {
			return nil, &EntryError{Entry: m, Reason: "not an HTTP method; want one of " + strings.Join(knownMethods, ", ")}
		}
		out = append(out, name)
	}
	return out, nil
}

// FromKeys builds a key's policy from its keys-file fields: egress= (as
// ParseHosts reads it) and egress_methods= (as ParseMethods reads it; ""
// for none). Methods without hosts are refused: they would restrict
// nothing, which is most likely a mistake in the file.
func FromKeys(egress, methods string) (Policy, error) {
	p, err := ParseHosts(egress)
	if err != nil {
		return Policy{}, err
	}
	if strings.TrimSpace(methods) == "" {
		return p, nil
	}
	if p.Empty() {
		return Policy{}, &EntryError{Entry: methods, Reason: "egress_methods without egress hosts allows nothing"}
	}
	m, err := ParseMethods(methods)
	if err != nil {
		return Policy{}, err
	}
	return p.WithMethods(m), nil
}

// WithMethods returns p restricted to methods (as ParseMethods returns
// them); nil lifts the restriction.
func (p Policy) WithMethods(methods []string) Policy {
	q := newPolicy(p.rules, methods)
	q.packages = p.packages
	return q
}

// Parse parses the canonical form String returns: the host entries, then
// optionally ";" and the methods, then optionally ";pip=" and the package
// names.
func Parse(s string) (Policy, error) {
	parts := strings.Split(s, ";")
	p, err := ParseHosts(parts[0])
	if err != nil {
		return Policy{}, err
	}
	for _, part := range parts[1:] {
		if names, ok := strings.CutPrefix(part, "pip="); ok {
			pk, err := ParsePackages(names)
			if err != nil {
				return Policy{}, err
			}
			p = p.WithPackages(pk)
			continue
		}
		m, err := ParseMethods(part)
		if err != nil {
			return Policy{}, err
		}
		p = p.WithMethods(m)
	}
	return p, nil
}

// parseEntry parses one "host[:port]" entry.
func parseEntry(entry string) (Rule, error) {
	e := strings.TrimSpace(entry)
	bad := func(format string, a ...any) (Rule, error) {
		return Rule{}, &EntryError{Entry: entry, Reason: fmt.Sprintf(format, a...)}
	}
	if e == "" {
		return bad("empty entry")
	}
	host, portStr, err := splitEntry(e)
	if err != nil {
		return bad("%v", err)
	}
	ports := defaultPorts
	if portStr != "" {
		n, err := strconv.Atoi(portStr)
		if err != nil || n < 1 || n > 65535 {
			return bad("port %q is not a number from 1 to 65535", portStr)
		}
		ports = []uint16{uint16(n)}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		if a.Zone() != "" {
			return bad("an address with a zone cannot be allowed")
		}
		if reason := neverAllowed(a); reason != "" {
			return bad("%s address, never reachable through the egress proxy", reason)
		}
		return Rule{Host: a.String(), Ports: ports}, nil
	}
	name, err := canonicalName(host)
	if err != nil {
		return bad("%v", err)
	}
	return Rule{Host: name, Ports: ports}, nil
}

// splitEntry splits "host", "host:port", "[v6]", "[v6]:port" and a bare
// IPv6 address.
func splitEntry(e string) (host, port string, err error) {
	if strings.HasPrefix(e, "[") {
		end := strings.Index(e, "]")
		if end < 0 {
			return "", "", fmt.Errorf("missing ]")
		}
		host, rest := e[1:end], e[end+1:]
		if rest == "" {
			return host, "", nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", "", fmt.Errorf("want [address]:port")
		}
		return host, rest[1:], nil
	}
	if strings.Count(e, ":") > 1 { // a bare IPv6 address
		return e, "", nil
	}
	host, port, _ = strings.Cut(e, ":")
	if strings.Contains(e, ":") && port == "" {
		return "", "", fmt.Errorf("empty port")
	}
	return host, port, nil
}

// canonicalName validates a host name or "*.suffix" pattern and returns it
// in its ASCII (punycode) lower-case form.
func canonicalName(host string) (string, error) {
	wild := strings.HasPrefix(host, "*.")
	name := strings.TrimSuffix(strings.TrimPrefix(host, "*."), ".")
	if strings.Contains(name, "*") {
		return "", fmt.Errorf("a wildcard is only allowed as the whole first label (*.example.org)")
	}
	ascii := strings.ToLower(name)
	if !isASCII(name) {
		var err error
		if ascii, err = idna.Lookup.ToASCII(name); err != nil {
			return "", fmt.Errorf("not a valid host name: %v", err)
		}
	}
	if ascii == "" || len(ascii) > 253 {
		return "", fmt.Errorf("not a valid host name: length %d", len(ascii))
	}
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			return "", err
		}
	}
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		return "", fmt.Errorf("a name ending in a numeric label looks like an IP address in another form; write the address as a.b.c.d")
	}
	if ascii == "localhost" || strings.HasSuffix(ascii, ".localhost") {
		return "", fmt.Errorf("localhost names loopback, never reachable through the egress proxy")
	}
	if wild {
		return "*." + ascii, nil
	}
	return ascii, nil
}

// checkLabel checks one DNS label: 1 to 63 letters, digits and hyphens, no
// hyphen at either end.
func checkLabel(l string) error {
	if l == "" || len(l) > 63 {
		return fmt.Errorf("host name label %q: want 1 to 63 characters", l)
	}
	for _, c := range l {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("host name label %q: character %q is not a letter, digit or hyphen", l, c)
		}
	}
	if l[0] == '-' || l[len(l)-1] == '-' {
		return fmt.Errorf("host name label %q starts or ends with a hyphen", l)
	}
	return nil
}

// isASCII reports whether s is plain ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
