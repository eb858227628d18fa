package policy

import (
	"strings"
)

// Python rule names.
const (
	RulePySubprocess    = "python.subprocess"
	RulePyOSExec        = "python.os_exec"
	RulePyPty           = "python.pty"
	RulePyCtypes        = "python.ctypes"
	RulePyDynamicImport = "python.dynamic_import"
	RulePyDynamicAttr   = "python.dynamic_attr"
	RulePyIntrospection = "python.introspection"
	RulePyDynamicExec   = "python.dynamic_exec"
)

// maxPyDepth bounds recursion into exec/eval literals and f-strings.
const maxPyDepth = 8

// Python returns the python violations of src. It is a token-level
// heuristic, not an interpreter: see doc.go for what it does not catch.
func (p *Analyzer) Python(src string) []Violation {
	a := &pyAnalyzer{
		p:    p,
		seen: map[string]bool{},
		aliases: map[string]string{
			"os": "os", "posix": "os", "nt": "os", "importlib": "importlib", "builtins": "builtins",
			"sys": "sys", "__import__": "__import__", "getattr": "getattr", "exec": "exec",
			"eval": "eval", "compile": "compile", "vars": "vars",
		},
	}
	a.analyze(src, 0)
	return a.out
}

// pyAnalyzer accumulates violations and name aliases over one program.
type pyAnalyzer struct {
	p       *Analyzer
	out     []Violation
	seen    map[string]bool
	aliases map[string]string // local name -> what it stands for
}

// add records a violation once per rule.
func (a *pyAnalyzer) add(rule, msg string) {
	if a.seen[rule] || !a.p.On(rule) {
		return
	}
	a.seen[rule] = true
	a.out = append(a.out, Violation{Rule: rule, Message: msg})
}

// moduleRule returns the rule a module path falls under, or "".
func moduleRule(mod string) string {
	for _, el := range strings.Split(mod, ".") {
		switch el {
		case "subprocess", "_posixsubprocess", "commands":
			return RulePySubprocess
		case "pty":
			return RulePyPty
		case "ctypes", "_ctypes", "cffi":
			return RulePyCtypes
		}
	}
	return ""
}

// isOSModule reports the modules exposing system/exec functions.
func isOSModule(mod string) bool { return mod == "os" || mod == "posix" || mod == "nt" }

// isExecName reports os functions that start programs.
func isExecName(n string) bool {
	switch n {
	case "system", "popen", "popen2", "popen3", "popen4", "forkpty", "startfile":
		return true
	}
	return strings.HasPrefix(n, "exec") || strings.HasPrefix(n, "spawn") || strings.HasPrefix(n, "posix_spawn")
}

// subprocessAttrs are asyncio/loop helpers that start programs.
var subprocessAttrs = map[string]bool{"create_subprocess_shell": true, "create_subprocess_exec": true, "subprocess_shell": true, "subprocess_exec": true}

// introspectionNames are the usual sandbox-escape dunders.
var introspectionNames = map[string]bool{"__subclasses__": true, "__globals__": true, "__builtins__": true}

// modMsg is the refusal message for a module rule.
func modMsg(rule, mod string) string {
	switch rule {
	case RulePySubprocess:
		return "starting programs with " + mod + " is refused; do the work in Python, or use the execute_shell tool"
	case RulePyPty:
		return "the pty module is refused"
	case RulePyCtypes:
		return mod + " (native code) is refused"
	}
	return mod + " is refused"
}

// analyze checks one piece of Python source.
func (a *pyAnalyzer) analyze(src string, depth int) {
	if depth > maxPyDepth {
		a.add(RulePyDynamicExec, "code nests exec/eval or f-strings too deeply to check")
		return
	}
	toks, fexprs := tokenizePython(src)
	for _, f := range fexprs {
		a.analyze(f, depth+1)
	}
	for i := 0; i < len(toks); i++ {
		if toks[i].kind == pyName {
			i = a.name(toks, i, depth)
		}
	}
}

// name checks the name token at i (imports, introspection, aliases and
// what is done with them) and returns the index to go on from.
func (a *pyAnalyzer) name(toks []pyTok, i, depth int) int {
	t := toks[i]
	afterDot := i > 0 && toks[i-1].kind == pyOp && toks[i-1].text == "."
	// import and from are keywords: wherever they start an import
	// (also after "if x:" or "try:" on one line), it is one.
	switch {
	case t.text == "import" && !afterDot:
		return a.importStmt(toks, i+1)
	case t.text == "from" && !afterDot && isFromImport(toks, i+1):
		return a.fromStmt(toks, i+1)
	}
	if introspectionNames[t.text] {
		a.add(RulePyIntrospection, t.text+" introspection (a classic sandbox escape) is refused")
	}
	if afterDot {
		if t.text == "__import__" && i+1 < len(toks) && isOp(toks[i+1], "(") {
			args, end := callArgs(toks, i+1)
			a.moduleExpr(args, toks, end, "__import__")
		}
		if subprocessAttrs[t.text] {
			a.add(RulePySubprocess, "starting programs with "+t.text+" is refused")
		}
		return i
	}
	// simple alias assignment: x = os / x = __import__('os')
	if i+2 < len(toks) && isOp(toks[i+1], "=") && !isOp(toks[i+2], "=") {
		if toks[i+2].kind == pyName && (i+3 >= len(toks) || toks[i+3].kind == pyNewline) {
			if v, ok := a.aliases[toks[i+2].text]; ok {
				a.aliases[t.text] = v
			}
		}
		if mod, ok := a.importCallModule(toks, i+2); ok && isOSModule(mod) {
			a.aliases[t.text] = "os"
		}
	}
	a.aliasUse(toks, i, depth)
	return i
}

// aliasUse checks what the code does with the name at i when it stands
// for a module or builtin the rules watch (os, sys, __import__,
// importlib, getattr, vars, exec/eval/compile).
func (a *pyAnalyzer) aliasUse(toks []pyTok, i, depth int) {
	t := toks[i]
	switch a.aliases[t.text] {
	case "os":
		if i+2 < len(toks) && isOp(toks[i+1], ".") && toks[i+2].kind == pyName {
			attr := toks[i+2].text
			if isExecName(attr) {
				a.add(RulePyOSExec, t.text+"."+attr+" (running programs) is refused; do the work in Python, or use the execute_shell tool")
			}
			if attr == "__dict__" {
				a.add(RulePyDynamicAttr, t.text+".__dict__ lookups are refused")
			}
		}
	case "sys":
		if i+3 < len(toks) && isOp(toks[i+1], ".") && toks[i+2].text == "modules" && isOp(toks[i+3], "[") {
			args, end := callArgs(toks, i+3)
			a.moduleExpr(args, toks, end, "sys.modules[...]")
		}
	case "__import__":
		if i+1 < len(toks) && isOp(toks[i+1], "(") {
			args, end := callArgs(toks, i+1)
			a.moduleExpr(args, toks, end, "__import__")
		}
	case "importlib":
		if i+3 < len(toks) && isOp(toks[i+1], ".") && (toks[i+2].text == "import_module" || toks[i+2].text == "__import__") && isOp(toks[i+3], "(") {
			args, end := callArgs(toks, i+3)
			a.moduleExpr(args, toks, end, "importlib.import_module")
		}
	case "importlib.import_module":
		if i+1 < len(toks) && isOp(toks[i+1], "(") {
			args, end := callArgs(toks, i+1)
			a.moduleExpr(args, toks, end, "import_module")
		}
	case "getattr":
		if i+1 < len(toks) && isOp(toks[i+1], "(") {
			args, _ := callArgs(toks, i+1)
			a.getattrCall(args)
		}
	case "vars":
		if i+2 < len(toks) && isOp(toks[i+1], "(") && toks[i+2].kind == pyName && a.aliases[toks[i+2].text] == "os" {
			a.add(RulePyDynamicAttr, "vars("+toks[i+2].text+") lookups are refused")
		}
	case "exec", "eval", "compile":
		if i+1 < len(toks) && isOp(toks[i+1], "(") {
			args, _ := callArgs(toks, i+1)
			if len(args) == 0 {
				break
			}
			if code, ok := literalConcat(args[0]); ok {
				a.analyze(code, depth+1)
			} else {
				a.add(RulePyDynamicExec, t.text+"() of computed text is refused; write the code directly")
			}
		}
	}
}

// importCallModule reads __import__('m') or importlib.import_module('m') at i.
func (a *pyAnalyzer) importCallModule(toks []pyTok, i int) (string, bool) {
	if i >= len(toks) || toks[i].kind != pyName {
		return "", false
	}
	open := -1
	switch a.aliases[toks[i].text] {
	case "__import__", "importlib.import_module":
		open = i + 1
	case "importlib":
		if i+3 < len(toks) && isOp(toks[i+1], ".") && toks[i+2].text == "import_module" {
			open = i + 3
		}
	}
	if open < 0 || open >= len(toks) || !isOp(toks[open], "(") {
		return "", false
	}
	args, _ := callArgs(toks, open)
	if len(args) == 0 {
		return "", false
	}
	return literalConcat(args[0])
}

// moduleExpr checks a dynamic import whose first argument is args[0];
// end is the index of the closing bracket, to see an .attr that follows.
func (a *pyAnalyzer) moduleExpr(args [][]pyTok, toks []pyTok, end int, what string) {
	if len(args) == 0 {
		return
	}
	mod, ok := literalConcat(args[0])
	if !ok {
		a.add(RulePyDynamicImport, what+" with a computed module name is refused; import modules by name")
		return
	}
	if r := moduleRule(mod); r != "" {
		a.add(r, modMsg(r, mod))
	}
	if isOSModule(mod) && end+2 < len(toks) && isOp(toks[end+1], ".") && isExecName(toks[end+2].text) {
		a.add(RulePyOSExec, mod+"."+toks[end+2].text+" (running programs) is refused")
	}
}

// getattrCall checks getattr(obj, name) on os-like modules and builtins.
func (a *pyAnalyzer) getattrCall(args [][]pyTok) {
	if len(args) < 2 {
		return
	}
	target := ""
	obj := args[0]
	if len(obj) == 1 && obj[0].kind == pyName {
		switch v := a.aliases[obj[0].text]; {
		case v == "os" || v == "builtins":
			target = v
		case obj[0].text == "__builtins__":
			target = "builtins"
		}
	} else {
		for _, t := range obj {
			if t.kind == pyString && isOSModule(t.text) {
				target = "os"
			}
			if t.kind == pyString && t.text == "builtins" {
				target = "builtins"
			}
		}
	}
	if target == "" {
		return
	}
	name, ok := literalConcat(args[1])
	switch {
	case !ok:
		a.add(RulePyDynamicAttr, "getattr on "+target+" with a computed name is refused")
	case target == "os" && isExecName(name):
		a.add(RulePyOSExec, "getattr(os, "+quoteShort(name)+") (running programs) is refused")
	case target == "builtins" && name == "__import__":
		a.add(RulePyDynamicImport, "getattr(builtins, '__import__') is refused")
	case target == "builtins" && (name == "exec" || name == "eval" || name == "compile"):
		a.add(RulePyDynamicExec, "getattr(builtins, "+quoteShort(name)+") is refused")
	}
}

// importStmt handles `import a.b as c, d` from i; it returns the index of
// the statement's end.
func (a *pyAnalyzer) importStmt(toks []pyTok, i int) int {
	for i < len(toks) && toks[i].kind != pyNewline {
		mod, j := dotted(toks, i)
		if mod == "" {
			i++
			continue
		}
		i = j
		bound, canon := strings.SplitN(mod, ".", 2)[0], strings.SplitN(mod, ".", 2)[0]
		if i+1 < len(toks) && toks[i].kind == pyName && toks[i].text == "as" && toks[i+1].kind == pyName {
			bound, canon = toks[i+1].text, mod
			i += 2
		}
		if r := moduleRule(mod); r != "" {
			a.add(r, modMsg(r, mod))
		}
		switch {
		case isOSModule(canon):
			a.aliases[bound] = "os"
		case canon == "importlib" || canon == "builtins" || canon == "sys":
			a.aliases[bound] = canon
		}
		if i < len(toks) && isOp(toks[i], ",") {
			i++
		}
	}
	return i
}

// fromStmt handles `from m import x as y, *` from i.
func (a *pyAnalyzer) fromStmt(toks []pyTok, i int) int {
	for i < len(toks) && isOp(toks[i], ".") {
		i++
	}
	mod, j := dotted(toks, i)
	i = j
	if r := moduleRule(mod); r != "" {
		a.add(r, modMsg(r, mod))
	}
	if i < len(toks) && toks[i].text == "import" {
		i++
	}
	for i < len(toks) && toks[i].kind != pyNewline {
		t := toks[i]
		if t.kind == pyOp && t.text == "*" {
			if isOSModule(mod) {
				a.add(RulePyOSExec, "from "+mod+" import * (exposes system, popen, exec*) is refused; import the names you need")
			}
			i++
			continue
		}
		if t.kind != pyName {
			i++
			continue
		}
		name, bound := t.text, t.text
		i++
		if i+1 < len(toks) && toks[i].text == "as" && toks[i+1].kind == pyName {
			bound = toks[i+1].text
			i += 2
		}
		if r := moduleRule(mod + "." + name); r != "" {
			a.add(r, modMsg(r, mod+"."+name))
		}
		switch {
		case isOSModule(mod) && isExecName(name):
			a.add(RulePyOSExec, "from "+mod+" import "+name+" (running programs) is refused")
		case subprocessAttrs[name]:
			a.add(RulePySubprocess, "starting programs with "+name+" is refused")
		case mod == "importlib" && (name == "import_module" || name == "__import__"):
			a.aliases[bound] = "importlib.import_module"
		case mod == "builtins" && a.aliases[name] != "" && name != "builtins":
			a.aliases[bound] = a.aliases[name]
		case mod == "" && isOSModule(name):
			a.aliases[bound] = "os"
		}
	}
	return i
}

// isFromImport reports whether the tokens at i read [.]*dotted import.
func isFromImport(toks []pyTok, i int) bool {
	for i < len(toks) && isOp(toks[i], ".") {
		i++
	}
	_, j := dotted(toks, i)
	return j < len(toks) && toks[j].kind == pyName && toks[j].text == "import"
}

// dotted reads a dotted name at i and returns it and the index after it.
func dotted(toks []pyTok, i int) (string, int) {
	var parts []string
	for i < len(toks) && toks[i].kind == pyName {
		parts = append(parts, toks[i].text)
		i++
		if i+1 < len(toks) && isOp(toks[i], ".") && toks[i+1].kind == pyName {
			i++
			continue
		}
		break
	}
	return strings.Join(parts, "."), i
}

// isOp reports an operator token with the given text.
func isOp(t pyTok, op string) bool { return t.kind == pyOp && t.text == op }

// callArgs splits the bracketed arguments opening at toks[open] at
// top-level commas; it returns them and the index of the closing bracket.
func callArgs(toks []pyTok, open int) ([][]pyTok, int) {
	var args [][]pyTok
	var cur []pyTok
	depth := 0
	for i := open; i < len(toks); i++ {
		t := toks[i]
		if t.kind == pyOp {
			switch t.text {
			case "(", "[", "{":
				depth++
				if depth == 1 {
					continue
				}
			case ")", "]", "}":
				depth--
				if depth == 0 {
					if len(cur) > 0 {
						args = append(args, cur)
					}
					return args, i
				}
			case ",":
				if depth == 1 {
					args = append(args, cur)
					cur = nil
					continue
				}
			}
		}
		if t.kind == pyNewline {
			continue
		}
		cur = append(cur, t)
	}
	if len(cur) > 0 {
		args = append(args, cur)
	}
	return args, len(toks) - 1
}

// literalConcat evaluates an expression made only of string literals,
// '+' and parentheses (adjacent literals concatenate, as in Python).
func literalConcat(expr []pyTok) (string, bool) {
	var sb strings.Builder
	n := 0
	for _, t := range expr {
		switch {
		case t.kind == pyString:
			sb.WriteString(t.text)
			n++
		case isOp(t, "+") || isOp(t, "(") || isOp(t, ")"):
		default:
			return "", false
		}
	}
	return sb.String(), n > 0
}
