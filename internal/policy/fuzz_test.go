package policy

import "testing"

// FuzzPolicy feeds arbitrary text to the shell lexer, the Python tokenizer,
// the SQL pre-check and the path rules, which must never panic.
func FuzzPolicy(f *testing.F) {
	for _, s := range []string{
		"r''m -rf /", "$'\\x72", "$(", "`", "<<EOF\nx", "{a,b", "${IFS", "2>&1", "((1", "a=$((1+", "\\",
		"f'{", "'''", "\"\"\"x", "import", "from . import", "getattr(", "__import__(", "exec(", "b'\\x", "u'\\N{",
		"select ';", "/* x", "--", "../../..", "",
	} {
		f.Add(s)
	}
	p := testPolicy()
	f.Fuzz(func(t *testing.T, s string) {
		p.Shell(s)
		p.Python(s)
		SQLMultiple(s)
		p.Path(s, "/work", true)
		p.Path(s, "/workspace", false)
	})
}
