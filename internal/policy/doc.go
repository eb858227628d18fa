// Package policy is Airlock's static analysis of tool arguments: a
// forgiving POSIX-shell lexer and rule set (shell.*), a Python tokenizer
// and rule set (python.*), the SQL one-statement pre-check (sql.*) and the
// path confinement and secret-file rules (path.*), plus the generated
// Python programs of the file and SQL tools, which re-check the path rules
// inside the sandbox after resolving symlinks.
//
// Build an Analyzer with New(Config) and ask it about one argument at a time:
// Shell, Python, Path, SQL. Each answer is a list of Violations naming the
// rule (see Rules and the Rule* constants) and a message for the model.
// The package knows nothing of its callers; the dispatcher decides which
// argument gets which check, and whether a violation refuses the call or
// holds it for approval.
//
// The analysis is a guard rail for honest mistakes and obvious abuse, not
// the security boundary: the container is. It errs towards refusing
// computed command names and dynamic imports it cannot see through.
package policy
