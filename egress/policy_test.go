package egress

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

func TestParseHosts(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", ""},
		{"pypi.internal", "pypi.internal:80,pypi.internal:443"},
		{"pypi.internal,*.data.example:8443", "*.data.example:8443,pypi.internal:80,pypi.internal:443"},
		{" PyPI.Internal. , pypi.internal:8080", "pypi.internal:80,pypi.internal:443,pypi.internal:8080"},
		{"10.1.2.3:8080", "10.1.2.3:8080"},
		{"[fd00::5]:443,fd00::6", "fd00::5:443,fd00::6:80,fd00::6:443"},
		{"::ffff:10.1.2.3", "10.1.2.3:80,10.1.2.3:443"},
		{"bücher.example", "xn--bcher-kva.example:80,xn--bcher-kva.example:443"},
	} {
		p, err := ParseHosts(tc.in)
		if err != nil {
			t.Errorf("ParseHosts(%q): %v", tc.in, err)
			continue
		}
		got := strings.ReplaceAll(strings.ReplaceAll(p.String(), "[", ""), "]", "")
		if got != tc.want {
			t.Errorf("ParseHosts(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseHostsErrorsNameTheEntry(t *testing.T) {
	for _, tc := range []struct {
		in, entry, says string
	}{
		{"ok.example,bad_host", "bad_host", "character '_'"},
		{"a.example:0", "a.example:0", "port"},
		{"a.example:99999", "a.example:99999", "port"},
		{"a.example:", "a.example:", "empty port"},
		{"a.*.example", "a.*.example", "wildcard"},
		{"*", "*", "wildcard"},
		{"*foo.example", "*foo.example", "wildcard"},
		{"-a.example", "-a.example", "hyphen"},
		{"127.0.0.1", "127.0.0.1", "loopback"},
		{"[::1]:443", "[::1]:443", "loopback"},
		{"169.254.169.254", "169.254.169.254", "metadata"},
		{"fd00:ec2::254", "fd00:ec2::254", "metadata"},
		{"::ffff:169.254.169.254", "::ffff:169.254.169.254", "metadata"},
		{"0.0.0.0", "0.0.0.0", "unspecified"},
		{"fe80::1", "fe80::1", "link_local"},
		{"224.0.0.1", "224.0.0.1", "multicast"},
		{"localhost", "localhost", "loopback"},
		{"2130706433", "2130706433", "numeric"},
		{"a.example,,b.example", "", "empty entry"},
		{strings.Repeat("a", 64) + ".example", strings.Repeat("a", 64) + ".example", "63"},
	} {
		_, err := ParseHosts(tc.in)
		var ee *EntryError
		if !errors.As(err, &ee) {
			t.Errorf("ParseHosts(%q) = %v, want an *EntryError", tc.in, err)
			continue
		}
		if !errors.Is(err, core.ErrInvalid) {
			t.Errorf("ParseHosts(%q): %v does not carry ErrInvalid", tc.in, err)
		}
		if ee.Entry != tc.entry || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), `"`+tc.entry+`"`) {
			t.Errorf("ParseHosts(%q) = %v, want it to name %q and say %q", tc.in, err, tc.entry, tc.says)
		}
	}
}

func TestPolicyAllows(t *testing.T) {
	p, err := ParseHosts("pypi.internal,*.data.example:8443,10.1.2.3:8080,fd00::7")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		host string
		port int
		want bool
	}{
		{"pypi.internal", 443, true},
		{"PYPI.internal.", 80, true},
		{"pypi.internal", 8443, false},
		{"x.pypi.internal", 443, false},
		{"a.data.example", 8443, true},
		{"a.b.data.example", 8443, true},
		{"data.example", 8443, false},
		{"evildata.example", 8443, false},
		{"a.data.example", 443, false},
		{"10.1.2.3", 8080, true},
		{"::ffff:10.1.2.3", 8080, true},
		{"10.1.2.3", 80, false},
		{"[fd00::7]", 443, true},
		{"fd00:0::7", 80, true},
		{"10.1.2.4", 8080, false},
		{"", 443, false},
		{"pypi.internal", 0, false},
	} {
		if got := p.Allows(tc.host, tc.port); got != tc.want {
			t.Errorf("Allows(%q, %d) = %v, want %v", tc.host, tc.port, got, tc.want)
		}
	}
	if (Policy{}).Allows("pypi.internal", 443) || !(Policy{}).Empty() {
		t.Error("the zero policy must allow nothing")
	}
}

func TestMethods(t *testing.T) {
	m, err := ParseMethods("get, HEAD")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := ParseHosts("a.example")
	p = p.WithMethods(m)
	if !p.AllowsMethod("GET") || !p.AllowsMethod("HEAD") || p.AllowsMethod("POST") || p.Tunnels() {
		t.Errorf("GET,HEAD policy: %v", p)
	}
	if p.String() != "a.example:443,a.example:80;GET,HEAD" && p.String() != "a.example:80,a.example:443;GET,HEAD" {
		t.Errorf("canonical form %q", p.String())
	}
	m, _ = ParseMethods("GET,CONNECT")
	if !p.WithMethods(m).Tunnels() {
		t.Error("CONNECT in the methods must allow tunnels")
	}
	if p, _ := ParseHosts("a.example"); !p.Tunnels() || !p.AllowsMethod("DELETE") {
		t.Error("no methods list must allow every method and tunnels")
	}
	_, err = ParseMethods("GET,FETCH")
	var ee *EntryError
	if !errors.As(err, &ee) || ee.Entry != "FETCH" {
		t.Errorf("ParseMethods(GET,FETCH) = %v, want an error naming FETCH", err)
	}
}

func TestCanonicalFormAndHash(t *testing.T) {
	a, _ := ParseHosts("b.example,*.a.example:8443,b.example:443,10.0.0.1:81")
	b, _ := ParseHosts("10.0.0.1:81 , *.A.example:8443,B.example.")
	if a.String() != b.String() || a.Hash() != b.Hash() || !a.Equal(b) {
		t.Fatalf("same policy, different forms: %q %q", a, b)
	}
	if len(a.Hash()) != 16 {
		t.Errorf("hash %q: want 16 hex digits", a.Hash())
	}
	for _, p := range []Policy{a, a.WithMethods([]string{"HEAD", "GET"}), {}} {
		q, err := Parse(p.String())
		if err != nil || !q.Equal(p) {
			t.Errorf("Parse(%q) = %q, %v", p.String(), q.String(), err)
		}
		text, _ := p.MarshalText()
		var r Policy
		if err := r.UnmarshalText(text); err != nil || !r.Equal(p) {
			t.Errorf("text round trip of %q: %q, %v", p, r, err)
		}
	}
	c, _ := ParseHosts("b.example:443")
	if c.Hash() == a.Hash() {
		t.Error("different policies share a hash")
	}
	if a.WithMethods([]string{"GET"}).Hash() == a.Hash() {
		t.Error("methods must change the hash")
	}
}

func TestNarrow(t *testing.T) {
	key, _ := ParseHosts("pypi.internal,*.data.example:8443,*.example.org,10.1.2.3:8080,files.example.net")
	key = key.WithMethods([]string{"GET"})
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"nil keeps the key", nil, key.String()},
		{"empty means none", []string{}, ";GET"},
		{"exact inside", []string{"pypi.internal:443"}, "pypi.internal:443;GET"},
		{"exact under a pattern", []string{"eu.data.example:8443"}, "eu.data.example:8443;GET"},
		{"narrower pattern", []string{"*.eu.data.example:8443"}, "*.eu.data.example:8443;GET"},
		{"wider pattern narrows to the key's", []string{"*.example.org", "*.example.net"}, "*.example.org:443,*.example.org:80,files.example.net:443,files.example.net:80;GET"},
		{"port outside", []string{"pypi.internal:8443", "eu.data.example:443"}, ";GET"},
		{"host outside", []string{"pypi.other", "*.other"}, ";GET"},
		{"ip", []string{"10.1.2.3:8080", "10.1.2.4:8080"}, "10.1.2.3:8080;GET"},
		{"pattern does not cover the apex", []string{"data.example:8443"}, ";GET"},
	} {
		got, err := Narrow(key, tc.env)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		want := tc.want
		if w, err := Parse(tc.want); err == nil {
			want = w.String()
		}
		if got.String() != want {
			t.Errorf("%s: Narrow = %q, want %q", tc.name, got, want)
		}
	}
	if _, err := Narrow(key, []string{"ok.example", "bad host"}); err == nil || !strings.Contains(err.Error(), `"bad host"`) {
		t.Errorf("a bad environment entry: %v", err)
	}
	// Narrowing never widens: every (host, port) the result allows, the key allows.
	env := []string{"*.example.org:443", "x.y.example.org", "pypi.internal", "*.data.example:8443", "other.example:443"}
	n, _ := Narrow(key, env)
	for _, r := range n.Rules() {
		probe := strings.Replace(r.Host, "*.", "probe.", 1)
		for _, port := range r.Ports {
			if !key.Allows(probe, int(port)) {
				t.Errorf("narrowed policy allows %s:%d, the key does not", probe, port)
			}
		}
	}
}

func TestFromKeys(t *testing.T) {
	p, err := FromKeys("pypi.internal,*.data.example:8443", "GET,HEAD")
	if err != nil || p.String() != "*.data.example:8443,pypi.internal:80,pypi.internal:443;GET,HEAD" {
		t.Errorf("FromKeys = %q, %v", p, err)
	}
	if p, err := FromKeys("", ""); err != nil || !p.Empty() {
		t.Errorf("absent fields: %q, %v", p, err)
	}
	for _, tc := range [][2]string{{"", "GET"}, {"a.example", "GET,BREW"}, {"a.example,b_c", ""}} {
		if _, err := FromKeys(tc[0], tc[1]); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("FromKeys(%q, %q) = %v, want ErrInvalid", tc[0], tc[1], err)
		}
	}
}
