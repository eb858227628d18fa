package policy

import (
	"strconv"
	"strings"
	"unicode"
)

// A forgiving Python tokenizer for the policy. It recognises names,
// strings (all prefixes, triple quotes, escapes decoded for non-raw
// strings), numbers, operators and logical line ends, and skips comments.
// f-string replacement fields are returned separately so they are checked
// as code. It never fails.

// pyTokKind classifies a token.
type pyTokKind int

const (
	pyName pyTokKind = iota
	pyString
	pyNumber
	pyOp
	pyNewline
)

// pyTok is one token.
type pyTok struct {
	kind pyTokKind
	text string // names/ops: the source; strings: the decoded value
}

// tokenizePython returns the tokens of src and the code found inside
// f-string replacement fields.
func tokenizePython(src string) (toks []pyTok, fexprs []string) {
	s := []rune(src)
	depth := 0 // bracket depth: newlines inside brackets do not end a line
	emitNL := func() {
		if len(toks) > 0 && toks[len(toks)-1].kind != pyNewline {
			toks = append(toks, pyTok{kind: pyNewline})
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i += 2
		case c == '\n':
			if depth == 0 {
				emitNL()
			}
			i++
		case c == ';':
			emitNL()
			i++
		case unicode.IsSpace(c):
			i++
		case isPyIdentStart(c):
			j := i
			for j < len(s) && isPyIdent(s[j]) {
				j++
			}
			word := string(s[i:j])
			if j < len(s) && (s[j] == '\'' || s[j] == '"') && isStringPrefix(word) {
				val, fx, end := readPyString(s, j, strings.ContainsAny(word, "rR"), strings.ContainsAny(word, "fF"))
				toks = append(toks, pyTok{kind: pyString, text: val})
				fexprs = append(fexprs, fx...)
				i = end
				continue
			}
			toks = append(toks, pyTok{kind: pyName, text: word})
			i = j
		case c == '\'' || c == '"':
			val, _, end := readPyString(s, i, false, false)
			toks = append(toks, pyTok{kind: pyString, text: val})
			i = end
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (isPyIdent(s[j]) || s[j] == '.') {
				j++
			}
			toks = append(toks, pyTok{kind: pyNumber, text: string(s[i:j])})
			i = j
		default:
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				if depth > 0 {
					depth--
				}
			}
			toks = append(toks, pyTok{kind: pyOp, text: string(c)})
			i++
		}
	}
	emitNL()
	return toks, fexprs
}

// isPyIdentStart reports a character that may start a name.
func isPyIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

// isPyIdent reports a name character.
func isPyIdent(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// isStringPrefix reports r, b, u, f and their combinations.
func isStringPrefix(w string) bool {
	if len(w) > 2 {
		return false
	}
	for _, r := range strings.ToLower(w) {
		if !strings.ContainsRune("rbuf", r) {
			return false
		}
	}
	return true
}

// readPyString reads a string literal whose quote is at s[i]. It returns
// the decoded value, the replacement-field code of an f-string, and the
// index after the literal.
func readPyString(s []rune, i int, raw, fstr bool) (string, []string, int) {
	q := s[i]
	triple := i+2 < len(s) && s[i+1] == q && s[i+2] == q
	j := i + 1
	if triple {
		j = i + 3
	}
	var sb strings.Builder
	for j < len(s) {
		c := s[j]
		if c == q && (!triple || j+2 < len(s) && s[j+1] == q && s[j+2] == q) {
			if triple {
				j += 3
			} else {
				j++
			}
			break
		}
		if c == '\n' && !triple {
			break // unterminated
		}
		if c == '\\' && j+1 < len(s) {
			if raw {
				sb.WriteRune(c)
				sb.WriteRune(s[j+1])
				j += 2
				continue
			}
			v, n := decodePyEscape(s[j+1:])
			sb.WriteString(v)
			j += 1 + n
			continue
		}
		sb.WriteRune(c)
		j++
	}
	val := sb.String()
	var fx []string
	if fstr {
		fx = fstringFields(val)
	}
	return val, fx, j
}

// decodePyEscape decodes the escape after a backslash and returns the
// text and the number of runes consumed.
func decodePyEscape(s []rune) (string, int) {
	switch s[0] {
	case 'n':
		return "\n", 1
	case 't':
		return "\t", 1
	case 'r':
		return "\r", 1
	case '\n':
		return "", 1
	case 'x', 'u', 'U':
		n := map[rune]int{'x': 2, 'u': 4, 'U': 8}[s[0]]
		if len(s) > n {
			if v, err := strconv.ParseUint(string(s[1:1+n]), 16, 32); err == nil {
				return string(rune(v)), 1 + n
			}
		}
	case '0', '1', '2', '3', '4', '5', '6', '7':
		k := 0
		for k < 3 && k < len(s) && s[k] >= '0' && s[k] <= '7' {
			k++
		}
		if v, err := strconv.ParseUint(string(s[:k]), 8, 32); err == nil {
			return string(rune(v)), k
		}
	case 'N':
		if len(s) > 1 && s[1] == '{' {
			for k := 2; k < len(s); k++ {
				if s[k] == '}' {
					return "?", k + 1
				}
			}
		}
	}
	return string(s[0]), 1
}

// fstringFields returns the code inside {...} fields of an f-string body.
func fstringFields(body string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{':
			if depth == 0 && i+1 < len(body) && body[i+1] == '{' {
				i++
				continue
			}
			if depth == 0 {
				start = i + 1
			}
			depth++
		case '}':
			if depth > 0 {
				depth--
				if depth == 0 {
					out = append(out, body[start:i])
				}
			}
		}
	}
	return out
}
