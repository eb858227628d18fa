package egress

import (
	"slices"
	"strings"
)

// Narrow returns what both key and an environment's egress list allow: an
// environment can only narrow its key's policy, never widen it. A nil
// envList means the environment has no egress list (key is returned as
// is); an empty one means no network. The key's methods and package names
// are kept. Entries
// of envList are parsed as ParseList does; a bad one is an *EntryError.
//
// Each (host, port) of the result is allowed by both: an exact name meets
// a suffix pattern that covers it as the exact name, two patterns meet as
// the narrower one, and ports are intersected.
func Narrow(key Policy, envList []string) (Policy, error) {
	if envList == nil {
		return key, nil
	}
	env, err := ParseList(envList)
	if err != nil {
		return Policy{}, err
	}
	var out []Rule
	for _, k := range key.rules {
		for _, e := range env.rules {
			host, ok := meet(k, e)
			if !ok {
				continue
			}
			var ports []uint16
			for _, p := range k.Ports {
				if slices.Contains(e.Ports, p) {
					ports = append(ports, p)
				}
			}
			if len(ports) > 0 {
				out = append(out, Rule{Host: host, Ports: ports})
			}
		}
	}
	pol := newPolicy(out, key.methods)
	pol.packages = key.packages
	return pol, nil
}

// meet returns the host pattern matching exactly the names both a and b
// match, if there is one.
func meet(a, b Rule) (string, bool) {
	switch {
	case !a.wildcard() && !b.wildcard():
		return a.Host, a.Host == b.Host
	case !a.wildcard():
		return a.Host, b.matches(a.Host)
	case !b.wildcard():
		return b.Host, a.matches(b.Host)
	}
	// Two patterns: *.x.y and *.y meet as *.x.y.
	sa, sb := a.Host[1:], b.Host[1:]
	switch {
	case strings.HasSuffix(sa, sb):
		return a.Host, true
	case strings.HasSuffix(sb, sa):
		return b.Host, true
	}
	return "", false
}
