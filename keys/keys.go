package keys

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Env is the environment variable holding comma-separated API keys.
const Env = "AIRLOCK_API_KEYS"

// minKeyLen is the shortest accepted API key.
const minKeyLen = 16

// Set holds API keys as SHA-256 hashes, each with the owner name that
// resources made with it belong to. The plain keys are never kept.
type Set struct {
	entries []keyEntry
}

// keyEntry is one hashed key, its owner and its policy (nil: none).
type keyEntry struct {
	hash   [sha256.Size]byte
	owner  string
	policy *Policy
}

// New hashes keys. Each entry is either "KEY" (the owner becomes
// "key-" and the first 12 hex digits of its hash) or "NAME:KEY".
func New(keys ...string) (*Set, error) {
	ks := &Set{}
	for i, k := range keys {
		if err := ks.add(k); err != nil {
			return nil, fmt.Errorf("api key %d: %w", i+1, err)
		}
	}
	return ks, nil
}

// Load reads keys from file (one per line, "KEY" or "NAME:KEY",
// optionally followed by policy fields "name=value" separated by spaces,
// see Policy; blank lines and lines starting with # ignored) when file is
// not empty, and from env, the value of AIRLOCK_API_KEYS (comma separated,
// no policies). Both may be used. Only a policy may raise a key's limits
// above the server defaults (up to the server maximum).
func Load(file, env string) (*Set, error) {
	ks := &Set{}
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("api keys file: %w", err)
		}
		defer f.Close()
		if err := ks.readLines(f, filepath.Dir(file)); err != nil {
			return nil, fmt.Errorf("api keys file %s: %w", file, err)
		}
	}
	for i, k := range strings.Split(env, ",") {
		if k = strings.TrimSpace(k); k == "" {
			continue
		}
		if err := ks.add(k); err != nil {
			return nil, fmt.Errorf("%s entry %d: %w", Env, i+1, err)
		}
	}
	return ks, nil
}

// readLines adds one key per non-comment line of r; dir is the keys
// file's folder, which relative paths in policies start from.
func (ks *Set) readLines(r io.Reader, dir string) error {
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		pol, err := parsePolicy(fields[1:], dir)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		if len(fields) == 1 {
			pol = nil
		}
		if err := ks.add(fields[0]); err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		ks.entries[len(ks.entries)-1].policy = pol
	}
	return sc.Err()
}

// add hashes one "KEY" or "NAME:KEY" entry.
func (ks *Set) add(entry string) error {
	owner, key := "", entry
	if name, k, ok := strings.Cut(entry, ":"); ok && validOwnerName(name) {
		owner, key = name, k
	}
	if len(key) < minKeyLen {
		return fmt.Errorf("key shorter than %d characters", minKeyLen)
	}
	h := sha256.Sum256([]byte(key))
	if owner == "" {
		owner = "key-" + hex.EncodeToString(h[:6])
	}
	for _, e := range ks.entries {
		if e.hash == h {
			return fmt.Errorf("duplicate key")
		}
	}
	ks.entries = append(ks.entries, keyEntry{hash: h, owner: owner})
	return nil
}

// validOwnerName accepts short names of letters, digits, '-', '_' and '.'.
func validOwnerName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Policy returns the policy of owner's key from the keys file, nil when it
// has none. (Owners with several keys: the first key's with a policy.)
func (ks *Set) Policy(owner string) *Policy {
	if ks == nil {
		return nil
	}
	for _, e := range ks.entries {
		if e.owner == owner && e.policy != nil {
			return e.policy
		}
	}
	return nil
}

// Secrets returns the secret values of owner's key (its policy's
// secrets_file), nil when it has none; it fits
// dispatcher.Config.KeySecrets.
func (ks *Set) Secrets(owner string) []string {
	if p := ks.Policy(owner); p != nil && p.Secrets.Len() > 0 {
		return p.Secrets.List()
	}
	return nil
}

// Len is the number of keys; zero for a nil set.
func (ks *Set) Len() int {
	if ks == nil {
		return 0
	}
	return len(ks.entries)
}

// Owner returns the owner of key. Every stored hash is compared in constant
// time, so the time taken does not depend on which key (if any) matched.
func (ks *Set) Owner(key string) (string, bool) {
	if ks == nil || key == "" {
		return "", false
	}
	h := sha256.Sum256([]byte(key))
	owner, found := "", 0
	for _, e := range ks.entries {
		eq := subtle.ConstantTimeCompare(h[:], e.hash[:])
		if eq == 1 {
			owner = e.owner
		}
		found |= eq
	}
	return owner, found == 1
}
