package egress

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestPackageNames(t *testing.T) {
	for in, want := range map[string]string{"Foo_Bar": "foo-bar", "foo.-_bar": "foo-bar", "NumPy": "numpy", "a": "a"} {
		if got := NormalizePackage(in); got != want {
			t.Errorf("NormalizePackage(%q) = %q, want %q", in, got, want)
		}
	}
	got, err := ParsePackages(" Requests, numpy ,Foo_Bar,foo-bar")
	if err != nil || strings.Join(got, ",") != "foo-bar,numpy,requests" {
		t.Errorf("ParsePackages: %v %v", got, err)
	}
	for _, bad := range []string{"-x", "a b", "x/y", "../z"} {
		if _, err := ParsePackages(bad); err == nil {
			t.Errorf("ParsePackages(%q) accepted", bad)
		}
	}
	for file, want := range map[string]string{
		"/p/Foo_Bar-1.0-py3-none-any.whl": "foo-bar",
		"/p/foo-bar-2.0.tar.gz":           "foo-bar",
		"/p/x-1.zip":                      "x",
		"/p/a-b-1-2.0.tar.gz":             "a-b,a-b-1",
		"/p/index.html":                   "",
	} {
		if got := strings.Join(distName(file), ","); got != want {
			t.Errorf("distName(%q) = %q, want %q", file, got, want)
		}
	}
	// The canonical form carries the names, and Narrow and methods keep them.
	p, err := Parse("pypi.test:80;GET;pip=b,a")
	if err != nil || p.String() != "pypi.test:80;GET;pip=a,b" || !slices.Equal(p.Packages(), []string{"a", "b"}) {
		t.Fatalf("Parse: %q %v", p.String(), err)
	}
	if n, _ := Narrow(p, []string{"pypi.test:80"}); !slices.Equal(n.Packages(), []string{"a", "b"}) {
		t.Errorf("Narrow dropped the names: %q", n.String())
	}
	if q := p.WithMethods(nil); q.String() != "pypi.test:80;pip=a,b" {
		t.Errorf("WithMethods dropped the names: %q", q.String())
	}
	if q := p.WithPackages(nil); q.Hash() == p.Hash() || q.String() != "pypi.test:80;GET" {
		t.Errorf("names must change the form and the hash: %q", q.String())
	}
	if _, err := New(Config{Guard: loopbackGuard(t), Index: PackageIndex{URL: "ftp://x/simple"}}); err == nil {
		t.Error("an ftp index was accepted")
	}
}

// indexServer is a PEP 503 index on loopback that logs every path asked.
type indexServer struct {
	*testServer
	mu    sync.Mutex
	paths []string
}

func newIndexServer(t *testing.T) *indexServer {
	s := &indexServer{}
	s.testServer = newTestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		fmt.Fprintf(w, "index %s", r.URL.Path)
	}), nil)
	return s
}

func (s *indexServer) seen() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.paths, " ")
}

// TestProxyPackageNames: with allowed package names, the proxy lets the
// index's root, an allowed package's project page (any spelling) and its
// files through, and refuses another package's page and files, another
// path on the index host and a tunnel to the index host, naming the
// package; the index never sees a refused request. A key's names narrow
// the operator's.
func TestProxyPackageNames(t *testing.T) {
	ix := newIndexServer(t)
	other := newIndexServer(t) // files on another allowed host
	indexURL := fmt.Sprintf("http://allowed.test:%d/simple/", ix.port())
	r := newRig(t, func(c *Config) { c.Index = PackageIndex{URL: indexURL, Names: []string{"Good_Pkg", "also-ok"}} })
	pol := hostPort("allowed.test", ix.port()) + "," + hostPort("other.test", other.port())
	h := r.tp.register(t, pol, Caps{})
	base := fmt.Sprintf("http://allowed.test:%d", ix.port())
	files := fmt.Sprintf("http://other.test:%d", other.port())
	cases := []struct {
		url, reason string
	}{
		{base + "/simple/", ""},
		{base + "/simple/good.pkg/", ""},
		{base + "/simple/Good-Pkg", ""},
		{base + "/simple/bad/", "package:bad"},
		{base + "/simple/bad/../good-pkg/", ReasonPackagePath}, // read otherwise upstream, maybe
		{base + "/files/good_pkg-1.0-py3-none-any.whl", ""},
		{files + "/x/also_ok-2.0.tar.gz", ""},
		{files + "/x/evil-1.0-py3-none-any.whl", "package:evil"},
		{base + "/simple/../admin", ReasonPackagePath},
		{files + "/readme.txt", ""}, // another host: only files are checked
	}
	for _, c := range cases {
		code, body, err := r.get(t, c.url)
		want := 200
		if c.reason != "" {
			want = 403
		}
		if err != nil || code != want {
			t.Errorf("GET %s: %d %q %v, want %d", c.url, code, body, err, want)
		}
	}
	// A tunnel to the index host: the names could not be checked in it.
	c, resp := rawConnect(t, r.tp.addr, hostPort("allowed.test", ix.port()))
	c.Close()
	if resp.StatusCode != 403 || resp.Header.Get("X-Airlock-Egress") != ReasonPackageTLS {
		t.Errorf("CONNECT to the index: %d %q", resp.StatusCode, resp.Header.Get("X-Airlock-Egress"))
	}
	r.tp.evs.wait(t, len(cases)+1)
	rec := h.Close()
	for i, c := range cases {
		if a := rec.Attempts[i]; a.Reason != c.reason || a.Allowed != (c.reason == "") {
			t.Errorf("attempt %d (%s): %+v, want reason %q", i, c.url, a, c.reason)
		}
	}
	if s := ix.seen(); strings.Contains(s, "bad") || strings.Contains(s, "admin") {
		t.Errorf("the index saw a refused request: %s", s)
	}
	if s := other.seen(); strings.Contains(s, "evil") {
		t.Errorf("the file host saw a refused request: %s", s)
	}
	// A key's names narrow the operator's: also-ok is the operator's, not the key's.
	h = r.tp.register(t, pol+";pip=good-pkg,not-the-operators", Caps{})
	for url, want := range map[string]int{base + "/simple/good-pkg/": 200, base + "/simple/also-ok/": 403, base + "/simple/not-the-operators/": 403} {
		if code, _, err := r.get(t, url); err != nil || code != want {
			t.Errorf("with the key's names, GET %s: %d %v, want %d", url, code, err, want)
		}
	}
	h.Close()
}

// TestProxyPackageNamesOfAKeyAlone: without an operator index, a key's
// names bind /simple/NAME/ pages on any host and distribution files.
func TestProxyPackageNamesOfAKeyAlone(t *testing.T) {
	ix := newIndexServer(t)
	r := newRig(t, nil)
	h := r.tp.register(t, hostPort("allowed.test", ix.port())+";pip=good", Caps{})
	base := fmt.Sprintf("http://allowed.test:%d", ix.port())
	for url, want := range map[string]int{base + "/simple/good/": 200, base + "/simple/bad/": 403, base + "/f/bad-1.0.tar.gz": 403, base + "/f/good-1.0.tar.gz": 200} {
		if code, _, err := r.get(t, url); err != nil || code != want {
			t.Errorf("GET %s: %d %v, want %d", url, code, err, want)
		}
	}
	h.Close()
	if s := ix.seen(); strings.Contains(s, "bad") {
		t.Errorf("the index saw a refused request: %s", s)
	}
}
