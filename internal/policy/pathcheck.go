package policy

import (
	"path"
	"strings"
)

// Protected path patterns, shared by the Go pre-check and the in-sandbox
// re-check that the file tools' generated programs run after resolving
// symlinks. Matching is case-insensitive.
var (
	// secretNames are globs on the last path element.
	secretNames = []string{
		".env", ".env.*", "*.env", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
		"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx",
		".netrc", ".pgpass", ".git-credentials", ".npmrc", ".pypirc", ".htpasswd",
	}
	// secretDirs are path elements whose whole subtree is protected.
	secretDirs = []string{".ssh", ".aws", ".gnupg", ".kube", ".docker", ".azure", "gcloud"}
	// secretPaths are globs on the whole cleaned absolute path.
	secretPaths = []string{
		"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/shadow-", "/etc/gshadow-",
		"/proc/*/environ", "/proc/*/task/*/environ", "/proc/*/mem",
		"/run/secrets/*", "/var/run/secrets/*", "/var/run/secrets/*/*/*",
	}
)

// Path rule names.
const (
	RulePathSecret       = "path.secret_file"        // credentials and key files, read or write
	RulePathReadOutside  = "path.read_outside_roots" // reads confined to the work and input folders
	RulePathWriteOutside = "path.write_outside_work" // writes confined to the work folder
)

// resolveLexical joins p to base and cleans it, resolving ".." lexically.
func resolveLexical(base, p string) string {
	if !path.IsAbs(p) {
		p = base + "/" + p
	}
	return path.Clean(p)
}

// within reports whether p is root or below it (both cleaned, absolute).
func within(p, root string) bool {
	root = path.Clean(root)
	if root == "/" {
		return true
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// secretMatch returns the protected pattern that the cleaned absolute path
// p matches, or "".
func secretMatch(p string) string {
	low := strings.ToLower(p)
	base := path.Base(low)
	for _, g := range secretNames {
		if ok, _ := path.Match(g, base); ok {
			return g
		}
	}
	for _, el := range strings.Split(low, "/") {
		for _, d := range secretDirs {
			if el == d {
				return d + "/"
			}
		}
	}
	for _, g := range secretPaths {
		if ok, _ := path.Match(g, low); ok {
			return g
		}
	}
	return ""
}

// Path applies the path rules to one path argument. base is where a
// relative path starts; write selects the write confinement.
func (p *Analyzer) Path(raw, base string, write bool) *Violation {
	full := resolveLexical(base, raw)
	if p.On(RulePathSecret) {
		if hit := secretMatch(full); hit != "" {
			return &Violation{Rule: RulePathSecret, Message: "path " + quoteShort(raw) + " matches the protected pattern " + quoteShort(hit) + " (credentials and key files are never read or written)"}
		}
	}
	if write {
		if !within(full, p.cfg.WorkDir) {
			return &Violation{Rule: RulePathWriteOutside, Message: "path " + quoteShort(raw) + " resolves to " + quoteShort(full) + "; writes are allowed only under " + p.cfg.WorkDir}
		}
		return nil
	}
	if !within(full, p.cfg.WorkDir) && !within(full, p.cfg.InputDir) {
		return &Violation{Rule: RulePathReadOutside, Message: "path " + quoteShort(raw) + " resolves to " + quoteShort(full) + "; reads are allowed only under " + p.cfg.WorkDir + " and " + p.cfg.InputDir}
	}
	return nil
}
