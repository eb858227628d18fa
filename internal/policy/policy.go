package policy

import (
	"strings"
	"unicode/utf8"
)

// Violation is one policy rule that refused (or held) a call.
type Violation struct {
	// Rule is the rule's name, e.g. "shell.rm_root"; the Result's Reason
	// is "policy:" + Rule.
	Rule string
	// Message explains the refusal to the model.
	Message string
}

// RuleInfo documents one policy rule.
type RuleInfo struct {
	Name        string
	Description string
}

// Rules lists every policy rule with what it catches, for documentation,
// listings and tests.
func Rules() []RuleInfo {
	return []RuleInfo{
		{RuleShellRmRoot, "recursive or forced rm (or find -delete) of /, a top-level folder, home, or a path climbing out with ..; also --no-preserve-root"},
		{RuleShellMkfs, "mkfs*, mke2fs, mkswap, wipefs: formatting file systems"},
		{RuleShellDeviceWrite, "dd of=/dev/..., redirection or tee into a device other than /dev/null, stdout, stderr, tty, fd"},
		{RuleShellPrivilege, "sudo, su, doas, pkexec, runuser"},
		{RuleShellChmod777, "chmod to world-writable modes: 777, 0777, a+rwx, o+w"},
		{RuleShellDownloadExec, "curl/wget output piped or substituted into a shell or interpreter"},
		{RuleShellDecodeExec, "base64/xxd/openssl-decoded data piped or substituted into a shell or interpreter"},
		{RuleShellForkBomb, "a function that calls itself through a pipe or in the background (:(){ :|:& };:) and $0|$0 shapes"},
		{RuleShellReverseShell, "/dev/tcp and /dev/udp, nc/ncat -e/-c, socat exec:, interactive shells with redirected descriptors, mkfifo with nc"},
		{RuleShellDynamicCommand, "a command name computed at run time ($VAR, $(...), `...`) or eval/sh -c of computed text"},
		{RulePySubprocess, "subprocess, _posixsubprocess, asyncio subprocess helpers, in import, from-import, __import__, importlib or sys.modules"},
		{RulePyOSExec, "os/posix system, popen, exec*, spawn*, posix_spawn*, including aliases, from-imports, star imports and getattr with literal names"},
		{RulePyPty, "the pty module"},
		{RulePyCtypes, "ctypes, _ctypes and cffi"},
		{RulePyDynamicImport, "__import__ or importlib.import_module with a computed module name"},
		{RulePyDynamicAttr, "getattr on os/posix/builtins with a computed name, vars(os), os.__dict__"},
		{RulePyIntrospection, "__subclasses__, __globals__, __builtins__ escapes"},
		{RulePyDynamicExec, "exec/eval/compile of computed text (literal text is analysed like code)"},
		{RulePathSecret, "credential and key files (.env, id_rsa, *.pem, *.key, .aws/, .ssh/, /proc/*/environ, /etc/shadow ...), read or write"},
		{RulePathReadOutside, "reads outside the work and input folders (not switchable)"},
		{RulePathWriteOutside, "writes outside the work folder (not switchable)"},
		{RuleSQLMultiple, "more than one SQL statement in sqlite_query (Go pre-check and the engine)"},
		{RuleSQLReadOnly, "writes, ATTACH and value-setting pragmas, refused by the engine: mode=ro, query_only, an authorizer (not switchable)"},
	}
}

// Config switches the rule families and single rules and names the two
// folders the path rules confine to. The zero value of the switches
// enables every rule.
type Config struct {
	// WorkDir is the writable work folder (e.g. /work).
	WorkDir string
	// InputDir is the read-only input folder (e.g. /workspace).
	InputDir string
	// DisableShell turns off the shell.* rules.
	DisableShell bool
	// DisablePython turns off the python.* rules (also inside shell
	// commands such as python -c).
	DisablePython bool
	// DisablePaths turns off the path.* secret-file rules; confinement to
	// the work and input folders stays on.
	DisablePaths bool
	// Disabled names single rules to switch off (e.g. "shell.privilege").
	Disabled []string
}

// Analyzer evaluates the rules under one Config. It is immutable after
// New and safe for concurrent use.
type Analyzer struct {
	cfg      Config
	disabled map[string]bool
}

// New builds the Analyzer for cfg.
func New(cfg Config) *Analyzer {
	p := &Analyzer{cfg: cfg, disabled: map[string]bool{}}
	for _, r := range cfg.Disabled {
		p.disabled[r] = true
	}
	return p
}

// On reports whether rule is active under the Analyzer's Config.
func (p *Analyzer) On(rule string) bool {
	if p.disabled[rule] {
		return false
	}
	switch {
	case rule == RulePathReadOutside || rule == RulePathWriteOutside:
		return true
	case strings.HasPrefix(rule, "shell."):
		return !p.cfg.DisableShell
	case strings.HasPrefix(rule, "python."):
		return !p.cfg.DisablePython
	case strings.HasPrefix(rule, "path."):
		return !p.cfg.DisablePaths
	}
	return true
}

// SQL applies the SQL pre-check to one query and returns its violation, or
// nil (also when the rule is switched off).
func (p *Analyzer) SQL(q string) *Violation {
	if p.On(RuleSQLMultiple) && SQLMultiple(q) {
		return &Violation{Rule: RuleSQLMultiple, Message: "sqlite_query runs exactly one statement; split the query into separate calls"}
	}
	return nil
}

// containsRule reports whether vs already holds rule.
func containsRule(vs []Violation, rule string) bool {
	for _, v := range vs {
		if v.Rule == rule {
			return true
		}
	}
	return false
}

// quoteShort quotes s for a message, shortened to 80 characters.
func quoteShort(s string) string {
	if utf8.RuneCountInString(s) > 80 {
		r := []rune(s)
		s = string(r[:77]) + "..."
	}
	return "\"" + strings.ReplaceAll(s, "\"", "\\\"") + "\""
}
