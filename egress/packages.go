package egress

import (
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Package names (issue 29): the operator (Config.Index.Names, the flag
// --egress-pip-packages) and a key (pip_packages=, Policy.WithPackages)
// can name the Python packages a call may download. The proxy then
// refuses, before anything goes upstream, a plain-HTTP request for the
// project page of another package (PEP 503: INDEXPATH/NAME/) and for a
// distribution file of another package (a path ending in .whl, .tar.gz,
// .zip, .tar.bz2, .tgz or .egg, on any host), and any other path under
// the index host. Names are compared in PEP 503's normal form (lower
// case, runs of "-", "_" and "." as one "-").
//
// Inside a TLS tunnel the proxy sees no path, so the names only bind an
// index reached over plain http:// through the proxy. While names are
// restricted, a CONNECT to the index host is refused (ReasonPackageTLS),
// so pip cannot step around the check by switching to https on the same
// host; a package fetched over https from another host the policy allows
// is not checked (the operator lists only the index host).

// ReasonPackage starts the reason of a request refused for its package:
// "package:NAME" names the package (the metrics count it as "package").
const ReasonPackage = "package"

// ReasonPackageTLS is a tunnel to the package index while package names
// are restricted: the names could not be checked inside it.
const ReasonPackageTLS = "package_tls"

// ReasonPackagePath is a request to the package index host for a path that
// is neither the index, a project page nor a distribution file.
const ReasonPackagePath = "package_path"

// PackageIndex is the operator's Python package index as the proxy checks
// it.
type PackageIndex struct {
	// URL is pip's index URL (--egress-pip-index, e.g.
	// http://pypi.internal/simple): its host and port are the index host,
	// its path the prefix of project pages. Empty: project pages are
	// recognised as /simple/NAME/ on any host, and no host is the index.
	URL string
	// Names are the package names the operator allows (nil: any; an
	// empty non-nil list: none).
	Names []string
}

// indexRule is a PackageIndex parsed.
type indexRule struct {
	host   string // normalized index host ("" when no URL)
	port   int
	prefix string // "/simple/"
	names  []string
	set    bool // names restricts
}

// parseIndex reads a PackageIndex; a bad URL is an *EntryError.
func parseIndex(ix PackageIndex) (indexRule, error) {
	r := indexRule{prefix: "/simple/"}
	if ix.Names != nil {
		names, err := normalizePackages(ix.Names)
		if err != nil {
			return indexRule{}, err
		}
		r.names, r.set = names, true
	}
	if ix.URL == "" {
		return r, nil
	}
	u, err := url.Parse(ix.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return indexRule{}, &EntryError{Entry: ix.URL, Reason: "the package index must be an http:// or https:// URL"}
	}
	host, ok := normalizeDest(u.Hostname())
	if !ok {
		return indexRule{}, &EntryError{Entry: ix.URL, Reason: "bad host"}
	}
	r.host, r.port = host, 80
	if u.Scheme == "https" {
		r.port = 443
	}
	if p := u.Port(); p != "" {
		r.port = atoiPort(p)
	}
	r.prefix = strings.TrimSuffix(u.Path, "/") + "/"
	return r, nil
}

// atoiPort parses a port, 0 when bad.
func atoiPort(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > 65535 {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// packageName matches a valid distribution name (PEP 508).
var packageName = regexp.MustCompile(`^(?i:[a-z0-9]|[a-z0-9][a-z0-9._-]*[a-z0-9])$`)

// separators are the runs PEP 503 folds into one "-".
var separators = regexp.MustCompile(`[-_.]+`)

// NormalizePackage returns a package name in PEP 503's normal form: lower
// case, every run of "-", "_" and "." one "-".
func NormalizePackage(name string) string {
	return separators.ReplaceAllString(strings.ToLower(name), "-")
}

// ParsePackages parses a comma-separated list of package names (the flag
// --egress-pip-packages, a key's pip_packages=) into their normal forms,
// sorted; a bad name is an *EntryError. "" is an empty list.
func ParsePackages(s string) ([]string, error) {
	var raw []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			raw = append(raw, n)
		}
	}
	return normalizePackages(raw)
}

// normalizePackages checks and normalizes names, sorted and unique.
func normalizePackages(names []string) ([]string, error) {
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		if !packageName.MatchString(n) {
			return nil, &EntryError{Entry: n, Reason: "not a Python package name (letters, digits, '-', '_', '.')"}
		}
		out = append(out, NormalizePackage(n))
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// WithPackages returns p restricted to the package names given (normal
// forms, as ParsePackages returns them); nil lifts the restriction.
func (p Policy) WithPackages(names []string) Policy {
	q := newPolicy(p.rules, p.methods)
	if names != nil {
		q.packages = slices.Compact(slices.Sorted(slices.Values(names)))
		if q.packages == nil {
			q.packages = []string{}
		}
	}
	return q
}

// Packages returns the package names the policy allows, or nil when it
// does not restrict them.
func (p Policy) Packages() []string { return slices.Clone(p.packages) }

// distSuffixes end the file names of Python distributions.
var distSuffixes = []string{".whl", ".tar.gz", ".zip", ".tar.bz2", ".tgz", ".egg"}

// distName returns the candidate package names (normal forms) a
// distribution file name can belong to, or nil when the path names no
// distribution file. A wheel's name is its first "-" field; an sdist's is
// everything before a "-" followed by a digit (its version), which can
// be ambiguous, so every such split is a candidate.
func distName(p string) []string {
	base := path.Base(p)
	lower := strings.ToLower(base)
	suffix := ""
	for _, s := range distSuffixes {
		if strings.HasSuffix(lower, s) {
			suffix = s
			break
		}
	}
	if suffix == "" {
		return nil
	}
	stem := base[:len(base)-len(suffix)]
	if suffix == ".whl" || suffix == ".egg" {
		name, _, _ := strings.Cut(stem, "-")
		return []string{NormalizePackage(name)}
	}
	var out []string
	for i := 1; i < len(stem)-1; i++ {
		if stem[i] == '-' && stem[i+1] >= '0' && stem[i+1] <= '9' {
			out = append(out, NormalizePackage(stem[:i]))
		}
	}
	if out == nil {
		out = []string{NormalizePackage(stem)} // no version: the whole stem
	}
	return out
}

// packageCheck is what the proxy checks of one call's package names: the
// operator's index and names, and the call's own.
type packageCheck struct {
	ix     indexRule
	call   []string // the policy's names
	callOn bool     // the policy restricts
}

// restricted reports whether any list restricts package names.
func (c packageCheck) restricted() bool { return c.ix.set || c.callOn }

// allows reports whether name (normal form) is on every list that is set.
func (c packageCheck) allows(name string) bool {
	if c.ix.set && !slices.Contains(c.ix.names, name) {
		return false
	}
	return !c.callOn || slices.Contains(c.call, name)
}

// isIndexHost reports whether dest:port is the operator's index.
func (c packageCheck) isIndexHost(dest string, port int) bool {
	return c.ix.host != "" && dest == c.ix.host && port == c.ix.port
}

// tunnel returns ReasonPackageTLS for a CONNECT to the index host while
// names are restricted, else "".
func (c packageCheck) tunnel(dest string, port int) string {
	if c.restricted() && c.isIndexHost(dest, port) {
		return ReasonPackageTLS
	}
	return ""
}

// request checks a plain request's path; it returns the refusal reason
// ("package:NAME", ReasonPackagePath) and a message, or "" when it may go.
func (c packageCheck) request(dest string, port int, rawPath string) (string, string) {
	if !c.restricted() {
		return "", ""
	}
	asked := "/" + strings.TrimPrefix(rawPath, "/")
	p := path.Clean(asked)
	if clean := p; clean != asked && clean+"/" != asked {
		// Dot segments or doubled slashes: the upstream could read the
		// path otherwise than the check did.
		return ReasonPackagePath, "a path with dot segments or empty segments is refused while package names are checked"
	}
	if names := distName(p); names != nil {
		for _, n := range names {
			if c.allows(n) {
				return "", ""
			}
		}
		return ReasonPackage + ":" + names[0], "the package " + names[0] + " is not among the packages this call may download"
	}
	onIndex := c.isIndexHost(dest, port) || c.ix.host == ""
	if rest, ok := strings.CutPrefix(p+"/", c.ix.prefix); ok && onIndex {
		name, _, _ := strings.Cut(rest, "/")
		if name == "" {
			return "", "" // the index's root page: a list of names, no download
		}
		n := NormalizePackage(name)
		if c.allows(n) {
			return "", ""
		}
		return ReasonPackage + ":" + n, "the package " + n + " is not among the packages this call may download"
	}
	if c.isIndexHost(dest, port) {
		return ReasonPackagePath, "only the index, its project pages and distribution files of allowed packages are served from the package index"
	}
	return "", ""
}
