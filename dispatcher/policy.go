package dispatcher

import (
	"slices"
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

// policy evaluates the rules under one configuration.
type policy struct {
	cfg      Config
	disabled map[string]bool
	approval map[string]bool
}

// newPolicy builds the policy for cfg.
func newPolicy(cfg Config) *policy {
	p := &policy{cfg: cfg, disabled: map[string]bool{}, approval: map[string]bool{}}
	for _, r := range cfg.Policy.Disabled {
		p.disabled[r] = true
	}
	for _, r := range cfg.Policy.RequireApproval {
		p.approval[r] = true
	}
	return p
}

// on reports whether rule is active.
func (p *policy) on(rule string) bool {
	if p.disabled[rule] {
		return false
	}
	switch {
	case rule == RulePathReadOutside || rule == RulePathWriteOutside:
		return true
	case strings.HasPrefix(rule, "shell."):
		return !p.cfg.Policy.DisableShell
	case strings.HasPrefix(rule, "python."):
		return !p.cfg.Policy.DisablePython
	case strings.HasPrefix(rule, "path."):
		return !p.cfg.Policy.DisablePaths
	}
	return true
}

// needsApproval reports whether a firing rule holds the call instead of refusing.
func (p *policy) needsApproval(rule string) bool { return p.approval[rule] }

// check runs the tool's declared checks on args and returns every
// violation found, in check order. approved rules are skipped.
func (p *policy) check(t *registered, call Call, args Args, approved []string) []Violation {
	var out []Violation
	base := p.cfg.InputDir
	if call.SessionID != "" {
		base = p.cfg.WorkDir
	}
	for _, c := range t.Checks {
		v, ok := args[c.Arg].(string)
		if !ok {
			continue
		}
		var found []Violation
		switch c.Kind {
		case CheckShell:
			found = p.checkShell(v)
		case CheckPython:
			found = p.checkPython(v)
		case CheckReadPath, CheckWritePath:
			b := base
			if c.Kind == CheckWritePath {
				b = p.cfg.WorkDir // relative writes always start in the work folder
			}
			if vi := p.checkPath(v, b, c.Kind == CheckWritePath); vi != nil {
				found = []Violation{*vi}
			}
		case CheckSQL:
			if p.on(RuleSQLMultiple) && multipleStatements(v) {
				found = []Violation{{Rule: RuleSQLMultiple, Message: "sqlite_query runs exactly one statement; split the query into separate calls"}}
			}
		}
		for _, f := range found {
			if p.on(f.Rule) && !slices.Contains(approved, f.Rule) && !containsRule(out, f.Rule) {
				out = append(out, f)
			}
		}
	}
	return out
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
