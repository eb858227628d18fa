package policy

import "strings"

// SQL rule names.
const (
	// RuleSQLMultiple refuses more than one statement in sqlite_query.
	RuleSQLMultiple = "sql.multiple_statements"
	// RuleSQLReadOnly is reported by the engine-side guard (read-only open,
	// query_only, authorizer) when a statement tries to write, ATTACH or
	// set a pragma.
	RuleSQLReadOnly = "sql.read_only"
)

// SQLMultiple is the cheap Go pre-check: it reports whether q holds
// a ';' followed by anything but blanks and comments, outside string
// literals, quoted identifiers and comments. The engine refuses several
// statements as well (cursor.execute), so this only gives a clearer error.
func SQLMultiple(q string) bool {
	ended := false
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				return false
			}
			i += j
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			if j < 0 {
				return false
			}
			i += j + 3
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		case ended:
			return true
		case c == ';':
			ended = true
		case c == '\'' || c == '"' || c == '`' || c == '[':
			end := c
			if c == '[' {
				end = ']'
			}
			j := strings.IndexByte(q[i+1:], end)
			if j < 0 {
				return false
			}
			i += j + 1
		}
	}
	return false
}
