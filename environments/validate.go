package environments

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/egress"
	"github.com/airlock-dev/airlock/internal/secrets"
)

// The built-in environments: the images `make images` builds. A custom
// environment is built FROM one of them.
const (
	Python = "python"
	Shell  = "shell"
)

// Builtin reports whether name is a built-in environment.
func Builtin(name string) bool { return name == Python || name == Shell }

// Bounds on a spec's lists and values.
const (
	maxNameLen      = 40
	maxApt          = 256
	maxPip          = 256
	maxFiles        = 256
	maxEnv          = 64
	maxChecks       = 64
	maxEgress       = 64
	maxValueLen     = 4096
	maxCommandBytes = 1024
)

var (
	nameRe    = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	aptRe     = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$`)
	envNameRe = regexp.MustCompile(core.EnvNamePattern)
	moduleRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	// pipRe is the part of PEP 508 a spec may use: a name, extras and
	// version clauses. No URLs, markers or pip options ("-e", "--index-url"):
	// where packages come from is wheels and index_url, nothing else.
	pipRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?` +
		`(\s*\[\s*[A-Za-z0-9][A-Za-z0-9._-]*(\s*,\s*[A-Za-z0-9][A-Za-z0-9._-]*)*\s*\])?` +
		`(\s*(===|==|!=|<=|>=|~=|<|>)\s*[A-Za-z0-9.*+!_-]+(\s*,\s*(===|==|!=|<=|>=|~=|<|>)\s*[A-Za-z0-9.*+!_-]+)*)?$`)
)

// reservedEnv are variables the sandbox or its controller own: a spec may
// not set them. It is core.ReservedEnv (what a call may not set either)
// and what an image must not change besides: the variables the sandbox
// sets for every call (an image value would be silently overridden) and
// those that change how the controller's shells and the C library behave.
// Prefixes end in "*".
var reservedEnv = append(core.ReservedEnv(),
	"LANG", "MPLBACKEND", "MPLCONFIGDIR",
	"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "IFS", "CDPATH", "GLIBC_TUNABLES",
	"USER", "LOGNAME", "SHELL", "PWD", "OLDPWD", "TMPDIR")

// reservedName reports the reserved entry a variable name falls under.
func reservedName(name string) (string, bool) {
	for _, r := range reservedEnv {
		if p, ok := strings.CutSuffix(r, "*"); ok {
			if strings.HasPrefix(name, p) {
				return r, true
			}
		} else if name == r {
			return r, true
		}
	}
	return "", false
}

// FileRoots are the folders under which a spec's files may land: nowhere
// else, so no file can replace a system binary, library or configuration
// (/etc/passwd, /usr/bin/*, the dynamic loader's paths) or the Airlock
// controller (/opt/airlock, refused too), and nothing lands in the
// folders the sandbox mounts over (/work, /workspace, /tmp).
var FileRoots = []string{"/opt/", "/srv/", "/usr/local/share/"}

// controllerDir is the in-image controller's folder; no file may land in it.
const controllerDir = "/opt/airlock"

// Validate checks every field of s and reports every problem, each naming
// its field. It fills Base with python when empty. The error carries
// core.ErrInvalid.
func (s *Spec) Validate() error {
	var probs []string
	bad := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	switch {
	case s.Name == "":
		bad("name: required ([a-z0-9-])")
	case len(s.Name) > maxNameLen || !nameRe.MatchString(s.Name):
		bad("name %q: must be 1 to %d of a-z, 0-9 and '-', starting and ending with a letter or digit", s.Name, maxNameLen)
	case Builtin(s.Name):
		bad("name %q: is a built-in environment", s.Name)
	}
	if s.Base == "" {
		s.Base = Python
	}
	if !Builtin(s.Base) {
		bad("base %q: must be python or shell", s.Base)
	}
	checkList(&probs, "apt", s.Apt, maxApt, func(v string) string {
		if !aptRe.MatchString(v) {
			return "not a Debian package name (name or name=version)"
		}
		return ""
	})
	checkList(&probs, "pip", s.Pip, maxPip, func(v string) string {
		if !pipRe.MatchString(strings.TrimSpace(v)) {
			return "not a requirement of the form name[extras]<op>version (no URLs, markers or pip options)"
		}
		return ""
	})
	if s.Wheels != "" {
		if p := relPath(s.Wheels); p != "" {
			bad("wheels %q: %s", s.Wheels, p)
		}
	}
	if s.IndexURL != "" {
		if p := checkIndexURL(s.IndexURL); p != "" {
			bad("index_url: %s", p)
		}
	}
	if s.Base == Shell {
		for _, f := range []struct {
			name string
			set  bool
		}{{"pip", len(s.Pip) > 0}, {"wheels", s.Wheels != ""}, {"index_url", s.IndexURL != ""}, {"check_imports", len(s.CheckImports) > 0}} {
			if f.set {
				bad("%s: needs base python (the shell base has no Python)", f.name)
			}
		}
	}
	if s.IndexURL != "" && len(s.Pip) == 0 {
		bad("index_url: set without pip requirements")
	}
	s.checkFiles(&probs)
	s.checkEnv(&probs)
	checkList(&probs, "check_imports", s.CheckImports, maxChecks, func(v string) string {
		if !moduleRe.MatchString(v) {
			return "not a Python module name"
		}
		return ""
	})
	checkList(&probs, "check_commands", s.CheckCommands, maxChecks, func(v string) string {
		switch {
		case strings.TrimSpace(v) == "":
			return "empty"
		case len(v) > maxCommandBytes:
			return fmt.Sprintf("over %d bytes", maxCommandBytes)
		case !utf8.ValidString(v) || strings.ContainsRune(v, 0):
			return "not valid UTF-8 text"
		}
		return ""
	})
	checkList(&probs, "egress", s.Egress, maxEgress, checkEgress)
	if len(probs) > 0 {
		return invalid(strings.Join(probs, "; "))
	}
	return nil
}

// checkList checks a list's length, duplicates and each entry with one.
func checkList(probs *[]string, field string, list []string, limit int, one func(string) string) {
	if len(list) > limit {
		*probs = append(*probs, fmt.Sprintf("%s: %d entries, over the limit of %d", field, len(list), limit))
		return
	}
	seen := map[string]bool{}
	for _, v := range list {
		if seen[v] {
			*probs = append(*probs, fmt.Sprintf("%s: %q is listed twice", field, v))
			continue
		}
		seen[v] = true
		if p := one(v); p != "" {
			*probs = append(*probs, fmt.Sprintf("%s: %q: %s", field, v, p))
		}
	}
}

// relPath refuses a source path that is not relative to the spec's folder.
func relPath(p string) string {
	switch {
	case strings.ContainsRune(p, 0) || !utf8.ValidString(p):
		return "not valid text"
	case path.IsAbs(p) || strings.HasPrefix(p, "~"):
		return "must be relative to the spec's folder"
	case path.Clean(p) == ".":
		return "names the spec's folder itself"
	}
	return ""
}

// checkIndexURL accepts an http(s) URL without credentials (the spec and
// its record are not secret).
func checkIndexURL(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "not a URL: " + err.Error()
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http or https URL"
	case u.Host == "":
		return "has no host"
	case u.User != nil:
		return "must not carry credentials (the spec is not secret)"
	}
	return ""
}

// checkFiles checks the files map: destinations under FileRoots, sources
// relative to the spec, no destination inside another file's.
func (s *Spec) checkFiles(probs *[]string) {
	if len(s.Files) > maxFiles {
		*probs = append(*probs, fmt.Sprintf("files: %d entries, over the limit of %d", len(s.Files), maxFiles))
		return
	}
	for _, dest := range sortedKeys(s.Files) {
		if p := checkDest(dest); p != "" {
			*probs = append(*probs, fmt.Sprintf("files: %q: %s", dest, p))
		}
		if p := relPath(s.Files[dest]); p != "" {
			*probs = append(*probs, fmt.Sprintf("files: %q: source %q %s", dest, s.Files[dest], p))
		}
	}
}

// checkDest accepts an absolute, clean destination under one of FileRoots
// (and not in the controller's folder).
func checkDest(dest string) string {
	switch {
	case !utf8.ValidString(dest) || strings.ContainsAny(dest, "\x00\n\r"):
		return "not valid text"
	case !path.IsAbs(dest):
		return "must be an absolute path in the image"
	case path.Clean(dest) != dest:
		return fmt.Sprintf("must be a clean path (%s)", path.Clean(dest))
	case dest == controllerDir || strings.HasPrefix(dest, controllerDir+"/"):
		return "is the Airlock controller's folder"
	}
	for _, r := range FileRoots {
		if strings.HasPrefix(dest, r) {
			return ""
		}
	}
	return fmt.Sprintf("files may only land under %s (system paths would change the sandbox's hardening)", strings.Join(FileRoots, ", "))
}

// checkEnv checks the env map: valid names, none the sandbox owns, none
// secret-looking, values of bounded plain text.
func (s *Spec) checkEnv(probs *[]string) {
	if len(s.Env) > maxEnv {
		*probs = append(*probs, fmt.Sprintf("env: %d entries, over the limit of %d", len(s.Env), maxEnv))
		return
	}
	for _, k := range sortedKeys(s.Env) {
		v := s.Env[k]
		if !envNameRe.MatchString(k) {
			*probs = append(*probs, fmt.Sprintf("env: %q: not a valid variable name (capital letters, digits and _, not starting with a digit)", k))
			continue
		}
		if r, ok := reservedName(k); ok {
			*probs = append(*probs, fmt.Sprintf("env: %s: the sandbox owns %s", k, r))
			continue
		}
		switch {
		case secrets.LooksSecret(k):
			*probs = append(*probs, fmt.Sprintf("env: %s: looks like a secret; env is stored and shown in the clear, for non-secret settings only", k))
		case len(v) > maxValueLen || !utf8.ValidString(v) || strings.ContainsRune(v, 0):
			*probs = append(*probs, fmt.Sprintf("env: %s: the value must be text of at most %d bytes", k, maxValueLen))
		}
	}
}

// checkEgress checks one egress entry with the egress package's own
// grammar (the keys file's): host, *.suffix or an address, optionally
// :port.
func checkEgress(v string) string {
	if _, err := egress.ParseList([]string{v}); err != nil {
		var ee *egress.EntryError
		if errors.As(err, &ee) {
			return ee.Reason
		}
		return err.Error()
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
