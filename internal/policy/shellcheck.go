package policy

import (
	"path"
	"regexp"
	"strings"
)

// Shell rule names.
const (
	RuleShellRmRoot         = "shell.rm_root"
	RuleShellMkfs           = "shell.mkfs"
	RuleShellDeviceWrite    = "shell.device_write"
	RuleShellPrivilege      = "shell.privilege"
	RuleShellChmod777       = "shell.chmod_777"
	RuleShellDownloadExec   = "shell.download_exec"
	RuleShellDecodeExec     = "shell.decode_exec"
	RuleShellForkBomb       = "shell.fork_bomb"
	RuleShellReverseShell   = "shell.reverse_shell"
	RuleShellDynamicCommand = "shell.dynamic_command"
)

// maxShellDepth bounds recursion into nested commands (sh -c, $(...), eval).
const maxShellDepth = 8

// Shell returns the shell (and, for python -c, python) violations of src.
func (p *Analyzer) Shell(src string) []Violation {
	var out []Violation
	seen := map[string]bool{}
	add := func(rule, msg string) {
		if !seen[rule] && p.On(rule) {
			seen[rule] = true
			out = append(out, Violation{Rule: rule, Message: msg})
		}
	}
	p.shellText(src, 0, add)
	return out
}

// shellText checks one piece of shell source, recursing into nested commands.
func (p *Analyzer) shellText(src string, depth int, add func(rule, msg string)) {
	if depth > maxShellDepth {
		add(RuleShellDynamicCommand, "the command nests shells or substitutions too deeply to check")
		return
	}
	textRules(src, add)
	sc := parseShell(src)
	for _, n := range sc.nested {
		p.shellText(n, depth+1, add)
	}
	for _, pl := range sc.pipelines {
		p.pipeline(pl, depth, add)
	}
}

var (
	// forkFuncRE finds function definitions on whitespace-free text: NAME(){BODY}.
	forkFuncRE = regexp.MustCompile(`([A-Za-z_:.][A-Za-z0-9_:.-]*)\(\)\{([^}]*)\}`)
	// forkFuncKwRE finds `function NAME { BODY }` definitions.
	forkFuncKwRE = regexp.MustCompile(`function\s+([A-Za-z_:.][A-Za-z0-9_:.-]*)\s*(?:\(\))?\s*\{([^}]*)\}`)
)

// textRules are the checks done on raw text rather than on parsed commands.
func textRules(src string, add func(rule, msg string)) {
	low := strings.ToLower(src)
	if strings.Contains(low, "/dev/tcp/") || strings.Contains(low, "/dev/udp/") {
		add(RuleShellReverseShell, "opening network sockets through /dev/tcp or /dev/udp is refused")
	}
	compact := strings.Join(strings.Fields(src), "")
	bombs := forkFuncRE.FindAllStringSubmatch(compact, -1)
	for _, m := range forkFuncKwRE.FindAllStringSubmatch(src, -1) {
		bombs = append(bombs, []string{m[0], m[1], strings.Join(strings.Fields(m[2]), "")})
	}
	for _, m := range bombs {
		name, body := m[1], m[2]
		if strings.Contains(body, name+"|"+name) || strings.Contains(body, name+"&") || strings.Contains(body, name+"|&"+name) {
			add(RuleShellForkBomb, "a function that spawns itself recursively (fork bomb) is refused")
		}
	}
	if strings.Contains(compact, "$0|$0") || strings.Contains(compact, "$0&$0") {
		add(RuleShellForkBomb, "a script that spawns itself recursively (fork bomb) is refused")
	}
}

// shellNames are interpreters that run shell code from -c, a file or stdin.
var shellNames = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ash": true, "mksh": true, "fish": true, "csh": true, "tcsh": true}

// interpreterNames run code read from stdin when piped to.
var interpreterNames = map[string]bool{"python": true, "python2": true, "python3": true, "perl": true, "ruby": true, "node": true, "php": true, "lua": true}

// downloaders fetch data from the network.
var downloaders = map[string]bool{"curl": true, "wget": true, "fetch": true, "aria2c": true, "lwp-request": true, "http": true, "nc": true, "ncat": true, "netcat": true}

// pipeline checks one pipeline's commands and their combination.
func (p *Analyzer) pipeline(pl []shCmd, depth int, add func(rule, msg string)) {
	var fed struct{ download, decode bool } // what earlier stages pipe in
	hasInteractiveShell, hasNet := false, false
	for _, c := range pl {
		name, args, ok := p.command(c, depth, add)
		if !ok {
			continue
		}
		isShell := shellNames[name]
		runsStdin := (isShell || interpreterNames[name] || name == "source" || name == ".") && readsStdin(name, args)
		if runsStdin && fed.download {
			add(RuleShellDownloadExec, "piping downloaded content into "+name+" is refused; download to a file and inspect it first")
		}
		if runsStdin && fed.decode {
			add(RuleShellDecodeExec, "piping decoded (base64/hex) content into "+name+" is refused")
		}
		if downloaders[name] {
			fed.download = true
		}
		if isDecoder(name, args) {
			fed.decode = true
		}
		if isShell && hasFlag(args, 'i') {
			hasInteractiveShell = true
			for _, r := range c.redirs {
				if strings.Contains(r.op, "&") || r.op == "<>" {
					add(RuleShellReverseShell, "an interactive shell with redirected descriptors (reverse-shell shape) is refused")
				}
			}
		}
		if name == "nc" || name == "ncat" || name == "netcat" || name == "telnet" || name == "socat" {
			hasNet = true
		}
	}
	if hasInteractiveShell && hasNet {
		add(RuleShellReverseShell, "an interactive shell connected to a network tool (reverse-shell shape) is refused")
	}
}

// readsStdin reports whether an interpreter invocation takes its program from stdin.
func readsStdin(name string, args []shWord) bool {
	if name == "source" || name == "." {
		return len(args) == 0 || args[0].text == "/dev/stdin" || args[0].text == "-"
	}
	for _, a := range args {
		switch {
		case a.text == "-" || a.text == "-s" || a.text == "/dev/stdin":
			return true
		case a.text == "-c" || a.text == "-e" || a.text == "-m":
			return false
		case !strings.HasPrefix(a.text, "-"):
			return false // a script file
		}
	}
	return true
}

// isDecoder reports base64/hex decoders.
func isDecoder(name string, args []shWord) bool {
	switch name {
	case "base64", "base32", "basenc":
		for _, a := range args {
			if a.text == "--decode" || a.text == "-D" || strings.HasPrefix(a.text, "-") && !strings.HasPrefix(a.text, "--") && strings.Contains(a.text, "d") {
				return true
			}
		}
	case "xxd":
		return hasFlag(args, 'r')
	case "openssl":
		for _, a := range args {
			if a.text == "-d" || a.text == "base64" || a.text == "enc" {
				return true
			}
		}
	case "uudecode", "gunzip", "zcat", "bunzip2", "xz", "unxz", "rev":
		return true
	}
	return false
}

// hasFlag reports whether a short option letter f appears in args (-f or in a group like -xf).
func hasFlag(args []shWord, f byte) bool {
	for _, a := range args {
		t := a.text
		if t == "--" {
			return false
		}
		if len(t) > 1 && t[0] == '-' && t[1] != '-' && strings.IndexByte(t[1:], f) >= 0 {
			return true
		}
	}
	return false
}

// wrappers run their arguments as a command.
var wrappers = map[string]bool{"command": true, "builtin": true, "exec": true, "nohup": true, "time": true, "nice": true, "ionice": true, "stdbuf": true, "setsid": true, "env": true, "timeout": true, "xargs": true, "busybox": true, "unbuffer": true, "chroot": true, "then": true, "do": true, "else": true, "elif": true, "if": true, "while": true, "until": true, "!": true, "{": true, "}": true, "fi": true, "done": true, "esac": true}

// privileged commands change user.
var privileged = map[string]bool{"sudo": true, "su": true, "doas": true, "pkexec": true, "runuser": true}

// command checks one simple command and returns its resolved name and
// arguments; ok is false when there is nothing to run.
func (p *Analyzer) command(c shCmd, depth int, add func(rule, msg string)) (string, []shWord, bool) {
	for _, r := range c.redirs {
		if strings.HasPrefix(r.op, ">") || strings.HasPrefix(r.op, "&>") || r.op == "<>" {
			if t := r.target.text; isDevicePath(t) {
				add(RuleShellDeviceWrite, "writing to the device "+quoteShort(t)+" is refused")
			}
		}
	}
	words := c.words
	for {
		// leading assignments
		for len(words) > 0 && isAssignment(words[0]) {
			words = words[1:]
		}
		if len(words) == 0 {
			return "", nil, false
		}
		w := words[0]
		if w.dynamic {
			if v, ok := evalEcho(w); ok {
				w = shWord{text: v}
				words = append([]shWord{w}, words[1:]...)
			} else {
				add(RuleShellDynamicCommand, "the command name "+quoteShort(w.text)+" is computed at run time; write the command literally")
				return "", nil, false
			}
		}
		name := path.Base(w.text)
		if privileged[name] {
			add(RuleShellPrivilege, name+" is refused: the sandbox has no privileges to gain")
			if i := optionIndex(words[1:], "-c"); name == "su" && i >= 0 && i+2 < len(words) {
				p.runsText(name, words[i+2:i+3], depth, add, true)
			}
			words = skipOptions(words[1:], name)
			continue
		}
		if name == "for" || name == "case" || name == "select" || name == "function" {
			return "", nil, false
		}
		if wrappers[name] {
			words = skipOptions(words[1:], name)
			continue
		}
		if strings.HasSuffix(w.text, "()") || (len(words) > 1 && words[1].text == "()") {
			return "", nil, false // function definition header
		}
		args := words[1:]
		p.commandRules(name, args, c, depth, add)
		return name, args, true
	}
}

// evalEcho resolves a word that is exactly $(echo WORD) or $(printf WORD).
func evalEcho(w shWord) (string, bool) {
	if len(w.nested) != 1 || w.text != "$(...)" {
		return "", false
	}
	sc := parseShell(w.nested[0])
	if len(sc.pipelines) != 1 || len(sc.pipelines[0]) != 1 {
		return "", false
	}
	ws := sc.pipelines[0][0].words
	if len(ws) < 2 || (ws[0].text != "echo" && ws[0].text != "printf") {
		return "", false
	}
	var parts []string
	for _, a := range ws[1:] {
		if a.dynamic {
			return "", false
		}
		if a.text == "-n" {
			continue
		}
		if strings.ContainsAny(a.text, "\\%") || strings.HasPrefix(a.text, "-") {
			return "", false // escapes and formats: not evaluated here
		}
		parts = append(parts, a.text)
	}
	return strings.TrimSpace(strings.Join(parts, " ")), true
}

// isAssignment reports NAME=value words.
func isAssignment(w shWord) bool {
	i := strings.IndexByte(w.text, '=')
	if i <= 0 {
		return false
	}
	for _, r := range w.text[:i] {
		if !isNameRune(r) {
			return false
		}
	}
	return true
}

// skipOptions drops a wrapper's own options and operands before the command it runs.
func skipOptions(ws []shWord, wrapper string) []shWord {
	for len(ws) > 0 {
		t := ws[0].text
		switch {
		case t == "--":
			return ws[1:]
		case wrapper == "env" && isAssignment(ws[0]):
			ws = ws[1:]
		case strings.HasPrefix(t, "-") && len(t) > 1:
			ws = ws[1:]
			// options that take a value
			if len(ws) > 0 && (wrapper == "env" && (t == "-u" || t == "-C" || t == "-S") ||
				wrapper == "nice" && t == "-n" || wrapper == "timeout" && (t == "-s" || t == "-k") ||
				wrapper == "xargs" && (t == "-I" || t == "-n" || t == "-P" || t == "-d" || t == "-L" || t == "-s") ||
				privileged[wrapper] && (t == "-u" || t == "-g")) {
				ws = ws[1:]
			}
		case wrapper == "timeout" && len(t) > 0 && (t[0] >= '0' && t[0] <= '9'):
			ws = ws[1:]
		case wrapper == "chroot" && strings.HasPrefix(t, "/"):
			ws = ws[1:]
		case wrapper == "busybox" && t == "sh":
			return ws
		default:
			return ws
		}
	}
	return ws
}

// isDevicePath reports a /dev path that is not a harmless stream.
func isDevicePath(t string) bool {
	t = path.Clean(t)
	if !strings.HasPrefix(t, "/dev/") {
		return false
	}
	switch t {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero":
		return false
	}
	if strings.HasPrefix(t, "/dev/fd/") || strings.HasPrefix(t, "/dev/tcp/") || strings.HasPrefix(t, "/dev/udp/") || strings.HasPrefix(t, "/dev/shm/") {
		return false
	}
	return true
}

// commandRules applies the per-command rules to one resolved command.
func (p *Analyzer) commandRules(name string, args []shWord, c shCmd, depth int, add func(rule, msg string)) {
	switch {
	case name == "rm":
		checkRm(args, add)
	case name == "find":
		checkFind(args, add)
	case strings.HasPrefix(name, "mkfs") || name == "mke2fs" || name == "mkswap" || name == "wipefs":
		add(RuleShellMkfs, name+" (formatting a file system) is refused")
	case name == "dd":
		for _, a := range args {
			if strings.HasPrefix(a.text, "of=") && isDevicePath(a.text[3:]) {
				add(RuleShellDeviceWrite, "dd to the device "+quoteShort(a.text[3:])+" is refused")
			}
		}
	case name == "tee" || name == "shred" || name == "cp" || name == "mv":
		for _, a := range args {
			if isDevicePath(a.text) {
				add(RuleShellDeviceWrite, name+" to the device "+quoteShort(a.text)+" is refused")
			}
		}
	case name == "chmod":
		checkChmod(args, add)
	case name == "nc" || name == "ncat" || name == "netcat":
		for _, a := range args {
			if a.text == "--exec" || a.text == "--sh-exec" || a.text == "--lua-exec" || strings.HasPrefix(a.text, "--exec=") || strings.HasPrefix(a.text, "--sh-exec=") {
				add(RuleShellReverseShell, name+" running a program (reverse-shell shape) is refused")
			}
		}
		if hasFlag(args, 'e') || hasFlag(args, 'c') {
			add(RuleShellReverseShell, name+" -e/-c (reverse-shell shape) is refused")
		}
	case name == "socat":
		for _, a := range args {
			l := strings.ToLower(a.text)
			if strings.Contains(l, "exec:") || strings.Contains(l, "system:") {
				add(RuleShellReverseShell, "socat exec:/system: (reverse-shell shape) is refused")
			}
		}
	case name == "mkfifo":
		if containsCommand(c, "nc", "ncat", "netcat", "telnet") {
			add(RuleShellReverseShell, "mkfifo with a network tool (reverse-shell shape) is refused")
		}
	case name == "eval":
		p.runsText(name, args, depth, add, true)
	case shellNames[name]:
		if i := optionIndex(args, "-c"); i >= 0 && i+1 < len(args) {
			p.runsText(name, args[i+1:i+2], depth, add, true)
		} else {
			p.runsText(name, args, depth, add, false)
		}
		for _, r := range c.redirs {
			if r.op == "<<" || r.op == "<<<" {
				p.heredoc(r, depth, add, false)
			}
		}
	case name == "source" || name == ".":
		p.runsText(name, args, depth, add, false)
	case strings.HasPrefix(name, "python"):
		if i := optionIndex(args, "-c"); i >= 0 && i+1 < len(args) && !args[i+1].dynamic {
			p.pythonInShell(args[i+1].text, add)
		}
		for _, r := range c.redirs {
			if r.op == "<<" || r.op == "<<<" {
				p.heredoc(r, depth, add, true)
			}
		}
	}
}

// containsCommand is a cheap scan for a network tool elsewhere in the same
// command's words (mkfifo /tmp/f; nc ... is usually one line).
func containsCommand(c shCmd, names ...string) bool {
	for _, w := range c.words {
		for _, n := range names {
			if path.Base(w.text) == n {
				return true
			}
		}
	}
	return false
}

// optionIndex returns the index of option opt (alone or ending a short group like -lc).
func optionIndex(args []shWord, opt string) int {
	for i, a := range args {
		if a.text == opt || len(a.text) > 2 && a.text[0] == '-' && a.text[1] != '-' && strings.HasSuffix(a.text, opt[1:]) {
			return i
		}
	}
	return -1
}

// runsText checks arguments that a shell will run as code: literal text is
// parsed recursively; computed text is refused, naming downloads and
// decoders when the computing command shows them.
func (p *Analyzer) runsText(name string, args []shWord, depth int, add func(rule, msg string), code bool) {
	var literal []string
	for _, a := range args {
		if a.dynamic {
			dl, dec := nestedFeeds(a.nested)
			switch {
			case dl:
				add(RuleShellDownloadExec, name+" running downloaded content is refused; download to a file and inspect it first")
			case dec:
				add(RuleShellDecodeExec, name+" running decoded (base64/hex) content is refused")
			case code || name == "source" || name == ".":
				add(RuleShellDynamicCommand, name+" of text computed at run time is refused; write the commands literally")
			}
			continue
		}
		literal = append(literal, a.text)
	}
	if code && len(literal) > 0 {
		p.shellText(strings.Join(literal, " "), depth+1, add)
	}
}

// nestedFeeds reports whether nested commands download or decode.
func nestedFeeds(nested []string) (download, decode bool) {
	for _, n := range nested {
		for _, pl := range parseShell(n).pipelines {
			for _, c := range pl {
				ws := c.words
				for len(ws) > 0 && isAssignment(ws[0]) {
					ws = ws[1:]
				}
				if len(ws) == 0 {
					continue
				}
				name := path.Base(ws[0].text)
				if downloaders[name] {
					download = true
				}
				if isDecoder(name, ws[1:]) {
					decode = true
				}
			}
		}
	}
	return download, decode
}

// heredoc checks a here-document or here-string fed to an interpreter.
func (p *Analyzer) heredoc(r shRedir, depth int, add func(rule, msg string), python bool) {
	body := r.body
	if r.op == "<<<" {
		if r.target.dynamic {
			dl, dec := nestedFeeds(r.target.nested)
			if dl {
				add(RuleShellDownloadExec, "feeding downloaded content to an interpreter is refused")
			}
			if dec {
				add(RuleShellDecodeExec, "feeding decoded (base64/hex) content to an interpreter is refused")
			}
		}
		body = r.target.text
	}
	if python {
		p.pythonInShell(body, add)
		return
	}
	p.shellText(body, depth+1, add)
}

// pythonInShell applies the python rules to python code found in a shell command.
func (p *Analyzer) pythonInShell(code string, add func(rule, msg string)) {
	for _, v := range p.Python(code) {
		add(v.Rule, v.Message+" (in python code inside the shell command)")
	}
}

// checkRm flags recursive or forced rm of broad paths.
func checkRm(args []shWord, add func(rule, msg string)) {
	recursive, force, opts := false, false, true
	var targets []shWord
	for _, a := range args {
		t := a.text
		switch {
		case opts && t == "--":
			opts = false
		case opts && t == "--no-preserve-root":
			add(RuleShellRmRoot, "rm --no-preserve-root is refused")
		case opts && (t == "--recursive" || t == "-r" || t == "-R"):
			recursive = true
		case opts && t == "--force":
			force = true
		case opts && strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && len(t) > 1:
			if strings.ContainsAny(t, "rR") {
				recursive = true
			}
			if strings.Contains(t, "f") {
				force = true
			}
		case opts && strings.HasPrefix(t, "--"):
		default:
			targets = append(targets, a)
		}
	}
	if !recursive && !force {
		return
	}
	for _, t := range targets {
		if isBroadPath(t) {
			add(RuleShellRmRoot, "rm -r/-f of the broad path "+quoteShort(t.text)+" is refused; remove specific files or folders")
			return
		}
	}
}

// checkFind flags find over a broad path with -delete or -exec rm.
func checkFind(args []shWord, add func(rule, msg string)) {
	deletes := false
	for i, a := range args {
		if a.text == "-delete" || (a.text == "-exec" || a.text == "-execdir") && i+1 < len(args) && path.Base(args[i+1].text) == "rm" {
			deletes = true
		}
	}
	if !deletes {
		return
	}
	for _, a := range args {
		if strings.HasPrefix(a.text, "-") || a.text == "(" || a.text == "!" {
			break
		}
		if isBroadPath(a) {
			add(RuleShellRmRoot, "find "+quoteShort(a.text)+" with -delete/-exec rm is refused")
			return
		}
	}
}

// broadDynamicRE matches a word that is only an expansion, with at most a
// trailing slash or glob: $X, ${X}, $X/, $X/*, $(...).
var broadDynamicRE = regexp.MustCompile(`^(\$\{?[A-Za-z_@*0-9#?!-][A-Za-z0-9_]*\}?|\$\(\.\.\.\))/*\*?$`)

// isBroadPath reports /, top-level folders, home, and paths climbing out
// with .., after lexical cleaning; a target that is only an expansion
// counts as broad, since it may be any of these.
func isBroadPath(w shWord) bool {
	t := w.text
	if w.dynamic && broadDynamicRE.MatchString(t) {
		return true
	}
	if strings.HasPrefix(t, "$HOME") || strings.HasPrefix(t, "${HOME}") {
		t = "~" + strings.TrimPrefix(strings.TrimPrefix(t, "$HOME"), "${HOME}")
	}
	if t == "~" || strings.HasPrefix(t, "~/") || strings.HasPrefix(t, "~") && !strings.Contains(t, "/") {
		rest := strings.TrimPrefix(t, "~")
		rest = strings.TrimLeft(rest, "/")
		return rest == "" || rest == "*" || rest == ".*" || strings.HasPrefix(rest, "..")
	}
	if t == "" {
		return false
	}
	if !strings.HasPrefix(t, "/") {
		c := path.Clean(t)
		return c == ".." || strings.HasPrefix(c, "../")
	}
	c := path.Clean(t)
	if c == "/" {
		return true
	}
	parts := strings.Split(strings.TrimPrefix(c, "/"), "/")
	literal := 0
	for _, el := range parts {
		if strings.ContainsAny(el, "*?[") {
			break
		}
		literal++
	}
	if literal < len(parts) { // a glob: broad when it is within a top-level folder
		return literal <= 1
	}
	return len(parts) <= 1
}

// checkChmod flags world-writable modes.
func checkChmod(args []shWord, add func(rule, msg string)) {
	for _, a := range args {
		t := a.text
		if strings.HasPrefix(t, "-") && !strings.ContainsAny(t, "+=") {
			continue
		}
		if worldWritable(t) {
			add(RuleShellChmod777, "chmod "+t+" (world-writable) is refused; use 755 or 644")
			return
		}
	}
}

// worldWritable reports octal modes with the others-write bit, and
// symbolic modes granting write to o or a.
func worldWritable(m string) bool {
	octal := len(m) >= 3 && len(m) <= 5
	for _, r := range m {
		if r < '0' || r > '7' {
			octal = false
			break
		}
	}
	if octal {
		last := m[len(m)-1] - '0'
		return last&2 != 0
	}
	for _, clause := range strings.Split(m, ",") {
		i := strings.IndexAny(clause, "+=")
		if i < 0 {
			continue
		}
		who, perm := clause[:i], clause[i+1:]
		if strings.ContainsAny(who, "ao") && strings.Contains(perm, "w") {
			return true
		}
	}
	return false
}
