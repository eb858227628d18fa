package policy

import (
	"strconv"
	"strings"
)

// A small, forgiving POSIX-shell lexer for the policy: it is not a shell,
// it only recovers what a command would run. It removes quoting (so r''m,
// "r"m and r\m read as rm), decodes $'...' escapes, treats $IFS as a blank,
// expands {a,b,c} braces, and extracts nested commands from $(...), `...`,
// <(...) and >(...) so that they are checked too. Anything it cannot know
// statically (variables, substitutions) marks the word dynamic.

// shWord is one word after quote removal.
type shWord struct {
	text    string
	dynamic bool     // holds a variable or command substitution
	nested  []string // command substitutions inside the word
	quoted  bool     // some part was quoted
}

// shRedir is one redirection.
type shRedir struct {
	op     string // ">", ">>", "<", ">&", "<&", "&>", "<>", ">|", "<<", "<<<"
	target shWord
	body   string // here-document text for "<<"
}

// shCmd is one simple command.
type shCmd struct {
	words  []shWord
	redirs []shRedir
	bg     bool // ended by &
}

// shScript is the parse: pipelines of simple commands plus every nested
// command text found anywhere, and the here-document bodies.
type shScript struct {
	pipelines [][]shCmd
	nested    []string
}

// shLexer holds the state of one parse.
type shLexer struct {
	s   []rune
	i   int
	out shScript
	cur shCmd
	pl  []shCmd
	// pending here-documents waiting for the next newline
	heredocDelims []heredocDelim
}

// heredocDelim is the terminator of a pending here-document.
type heredocDelim struct {
	word     string
	stripTab bool
}

// parseShell lexes src into pipelines. It never fails: unbalanced quotes
// run to the end of the input.
func parseShell(src string) shScript {
	lx := &shLexer{s: []rune(src)}
	lx.run()
	return lx.out
}

// run is the main loop.
func (lx *shLexer) run() {
	for lx.i < len(lx.s) {
		c := lx.s[lx.i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			lx.i++
		case c == '\\' && lx.peek(1) == '\n':
			lx.i += 2
		case c == '\n':
			lx.i++
			lx.endCommand(false)
			lx.endPipeline()
			lx.readHeredocs()
		case c == '#':
			for lx.i < len(lx.s) && lx.s[lx.i] != '\n' {
				lx.i++
			}
		case c == ';':
			lx.i++
			if lx.peek(0) == ';' { // ;; in case
				lx.i++
			}
			lx.endCommand(false)
			lx.endPipeline()
		case c == '&' && lx.peek(1) == '&':
			lx.i += 2
			lx.endCommand(false)
			lx.endPipeline()
		case c == '|' && lx.peek(1) == '|':
			lx.i += 2
			lx.endCommand(false)
			lx.endPipeline()
		case c == '|':
			lx.i++
			if lx.peek(0) == '&' {
				lx.i++
			}
			lx.endCommand(false)
		case c == '&' && lx.peek(1) == '>':
			lx.i += 2
			op := "&>"
			if lx.peek(0) == '>' {
				lx.i++
				op = "&>>"
			}
			lx.redirect(op)
		case c == '&':
			lx.i++
			lx.endCommand(true)
			lx.endPipeline()
		case c == '(' || c == ')':
			if c == '(' && lx.peek(1) == '(' { // (( arithmetic ))
				end := lx.findClose(lx.i+2, "))")
				lx.i = end
				continue
			}
			lx.i++
			lx.endCommand(false)
			lx.endPipeline()
		case (c == '<' || c == '>') && lx.peek(1) == '(':
			lx.addWord(lx.word())
		case c == '<' || c == '>':
			lx.redirect(lx.redirOp())
		case c >= '0' && c <= '9' && lx.isFDRedirect():
			for lx.s[lx.i] >= '0' && lx.s[lx.i] <= '9' {
				lx.i++
			}
			lx.redirect(lx.redirOp())
		default:
			if lx.atIFS() {
				continue
			}
			w := lx.word()
			lx.addWord(w)
		}
	}
	lx.endCommand(false)
	lx.endPipeline()
}

// peek returns the rune k positions ahead, or 0.
func (lx *shLexer) peek(k int) rune {
	if lx.i+k < len(lx.s) {
		return lx.s[lx.i+k]
	}
	return 0
}

// isFDRedirect reports whether digits at i are followed by < or >.
func (lx *shLexer) isFDRedirect() bool {
	if lx.i > 0 && !isShBlank(lx.s[lx.i-1]) && !strings.ContainsRune(";&|()\n", lx.s[lx.i-1]) {
		return false
	}
	j := lx.i
	for j < len(lx.s) && lx.s[j] >= '0' && lx.s[j] <= '9' {
		j++
	}
	return j < len(lx.s) && (lx.s[j] == '<' || lx.s[j] == '>') && (j+1 >= len(lx.s) || lx.s[j+1] != '(')
}

// isShBlank reports space or tab.
func isShBlank(r rune) bool { return r == ' ' || r == '\t' }

// redirOp consumes a redirection operator at i.
func (lx *shLexer) redirOp() string {
	for _, op := range []string{"<<<", "<<-", ">>", "<<", ">&", "<&", "<>", ">|", ">", "<"} {
		if strings.HasPrefix(string(lx.s[lx.i:min(lx.i+3, len(lx.s))]), op) {
			lx.i += len(op)
			return op
		}
	}
	lx.i++
	return string(lx.s[lx.i-1])
}

// redirect reads the target word of a redirection.
func (lx *shLexer) redirect(op string) {
	for lx.i < len(lx.s) && isShBlank(lx.s[lx.i]) {
		lx.i++
	}
	w := lx.word()
	r := shRedir{op: op, target: w}
	if op == "<<" || op == "<<-" {
		r.op = "<<"
		lx.heredocDelims = append(lx.heredocDelims, heredocDelim{word: w.text, stripTab: op == "<<-"})
	}
	lx.out.nested = append(lx.out.nested, w.nested...)
	lx.cur.redirs = append(lx.cur.redirs, r)
}

// readHeredocs consumes pending here-document bodies after a newline.
func (lx *shLexer) readHeredocs() {
	for _, d := range lx.heredocDelims {
		var body strings.Builder
		for lx.i < len(lx.s) {
			j := lx.i
			for j < len(lx.s) && lx.s[j] != '\n' {
				j++
			}
			line := string(lx.s[lx.i:j])
			lx.i = min(j+1, len(lx.s))
			cmp := line
			if d.stripTab {
				cmp = strings.TrimLeft(cmp, "\t")
			}
			if cmp == d.word {
				break
			}
			body.WriteString(line)
			body.WriteByte('\n')
		}
		lx.setHeredocBody(body.String())
	}
	lx.heredocDelims = nil
}

// setHeredocBody stores body into the first here-document still without
// one; pending bodies are read in order, so that is the right one.
func (lx *shLexer) setHeredocBody(body string) {
	for pi := range lx.out.pipelines {
		for ci := range lx.out.pipelines[pi] {
			for ri := range lx.out.pipelines[pi][ci].redirs {
				r := &lx.out.pipelines[pi][ci].redirs[ri]
				if r.op == "<<" && r.body == "" {
					r.body = body
					if body == "" {
						r.body = "\n"
					}
					return
				}
			}
		}
	}
}

// atIFS consumes an unquoted $IFS or ${IFS} and reports whether it did.
func (lx *shLexer) atIFS() bool {
	rest := string(lx.s[lx.i:min(lx.i+6, len(lx.s))])
	switch {
	case strings.HasPrefix(rest, "${IFS}"):
		lx.i += 6
		return true
	case strings.HasPrefix(rest, "$IFS") && !isNameRune(lx.peek(4)):
		lx.i += 4
		return true
	}
	return false
}

// addWord appends w to the current command, expanding {a,b,c} braces.
func (lx *shLexer) addWord(w shWord) {
	lx.out.nested = append(lx.out.nested, w.nested...)
	if !w.quoted && !w.dynamic && strings.HasPrefix(w.text, "{") && strings.HasSuffix(w.text, "}") && strings.Contains(w.text, ",") {
		for _, part := range strings.Split(w.text[1:len(w.text)-1], ",") {
			lx.cur.words = append(lx.cur.words, shWord{text: part})
		}
		return
	}
	lx.cur.words = append(lx.cur.words, w)
}

// endCommand closes the current simple command.
func (lx *shLexer) endCommand(bg bool) {
	if len(lx.cur.words) > 0 || len(lx.cur.redirs) > 0 {
		lx.cur.bg = bg
		lx.pl = append(lx.pl, lx.cur)
	}
	lx.cur = shCmd{}
}

// endPipeline closes the current pipeline.
func (lx *shLexer) endPipeline() {
	if len(lx.pl) > 0 {
		lx.out.pipelines = append(lx.out.pipelines, lx.pl)
	}
	lx.pl = nil
}

// isWordEnd reports whether r ends an unquoted word.
func isWordEnd(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || strings.ContainsRune(";&|()<>", r)
}

// isNameRune reports a shell variable name character.
func isNameRune(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}

// word reads one word at i, removing quotes.
func (lx *shLexer) word() shWord {
	var w shWord
	var sb strings.Builder
	for lx.i < len(lx.s) {
		c := lx.s[lx.i]
		switch {
		case (c == '<' || c == '>') && lx.peek(1) == '(':
			end := lx.findClose(lx.i+2, ")")
			w.nested = append(w.nested, string(lx.s[lx.i+2:max(lx.i+2, end-1)]))
			w.dynamic = true
			sb.WriteString("$(...)")
			lx.i = end
		case isWordEnd(c):
			w.text = sb.String()
			return w
		case c == '\\':
			if lx.i+1 < len(lx.s) {
				if lx.s[lx.i+1] != '\n' {
					sb.WriteRune(lx.s[lx.i+1])
				}
				lx.i += 2
			} else {
				lx.i++
			}
		case c == '\'':
			w.quoted = true
			j := lx.i + 1
			for j < len(lx.s) && lx.s[j] != '\'' {
				j++
			}
			sb.WriteString(string(lx.s[lx.i+1 : j]))
			lx.i = min(j+1, len(lx.s))
		case c == '"':
			w.quoted = true
			lx.i++
			lx.doubleQuoted(&sb, &w)
		case c == '$' && lx.peek(1) == '\'':
			w.quoted = true
			lx.i += 2
			sb.WriteString(lx.ansiC())
		case c == '$':
			if lx.atIFS() {
				w.text = sb.String()
				return w
			}
			lx.dollar(&sb, &w)
		case c == '`':
			lx.backtick(&sb, &w)
		default:
			sb.WriteRune(c)
			lx.i++
		}
	}
	w.text = sb.String()
	return w
}

// backtick reads a `...` command substitution at i: its text is kept as a
// nested command and the word becomes dynamic.
func (lx *shLexer) backtick(sb *strings.Builder, w *shWord) {
	end := lx.i + 1
	for end < len(lx.s) && lx.s[end] != '`' {
		if lx.s[end] == '\\' {
			end++
		}
		end++
	}
	w.nested = append(w.nested, string(lx.s[lx.i+1:min(end, len(lx.s))]))
	w.dynamic = true
	sb.WriteString("$(...)")
	lx.i = min(end+1, len(lx.s))
}

// doubleQuoted reads the inside of "..." up to the closing quote.
func (lx *shLexer) doubleQuoted(sb *strings.Builder, w *shWord) {
	for lx.i < len(lx.s) {
		c := lx.s[lx.i]
		switch {
		case c == '"':
			lx.i++
			return
		case c == '\\' && lx.i+1 < len(lx.s) && strings.ContainsRune("$`\"\\\n", lx.s[lx.i+1]):
			if lx.s[lx.i+1] != '\n' {
				sb.WriteRune(lx.s[lx.i+1])
			}
			lx.i += 2
		case c == '$':
			lx.dollar(sb, w)
		case c == '`':
			lx.backtick(sb, w)
		default:
			sb.WriteRune(c)
			lx.i++
		}
	}
}

// dollar reads a $ expansion at i.
func (lx *shLexer) dollar(sb *strings.Builder, w *shWord) {
	switch {
	case lx.peek(1) == '(' && lx.peek(2) == '(':
		end := lx.findClose(lx.i+3, "))")
		sb.WriteString("0")
		lx.i = end
	case lx.peek(1) == '(':
		end := lx.findClose(lx.i+2, ")")
		w.nested = append(w.nested, string(lx.s[lx.i+2:max(lx.i+2, end-1)]))
		w.dynamic = true
		sb.WriteString("$(...)")
		lx.i = end
	case lx.peek(1) == '{':
		end := lx.findClose(lx.i+2, "}")
		sb.WriteString("$" + string(lx.s[lx.i:end]))
		w.dynamic = true
		lx.i = end
	case isNameRune(lx.peek(1)) || strings.ContainsRune("@*#?$!-", lx.peek(1)) && lx.peek(1) != 0:
		j := lx.i + 1
		if isNameRune(lx.s[j]) {
			for j < len(lx.s) && isNameRune(lx.s[j]) {
				j++
			}
		} else {
			j++
		}
		sb.WriteString(string(lx.s[lx.i:j]))
		w.dynamic = true
		lx.i = j
	default:
		sb.WriteRune('$')
		lx.i++
	}
}

// ansiC decodes a $'...' string whose opening was consumed.
func (lx *shLexer) ansiC() string {
	var sb strings.Builder
	for lx.i < len(lx.s) {
		c := lx.s[lx.i]
		if c == '\'' {
			lx.i++
			break
		}
		if c != '\\' || lx.i+1 >= len(lx.s) {
			sb.WriteRune(c)
			lx.i++
			continue
		}
		e := lx.s[lx.i+1]
		lx.i += 2
		switch e {
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		case 'a', 'b', 'e', 'E', 'f', 'v':
			sb.WriteByte(' ')
		case 'x', 'u', 'U':
			n := map[rune]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := lx.i
			for j < len(lx.s) && j-lx.i < n && isHex(lx.s[j]) {
				j++
			}
			if v, err := strconv.ParseUint(string(lx.s[lx.i:j]), 16, 32); err == nil {
				sb.WriteRune(rune(v))
			}
			lx.i = j
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := lx.i - 1
			for j < len(lx.s) && j-(lx.i-1) < 3 && lx.s[j] >= '0' && lx.s[j] <= '7' {
				j++
			}
			if v, err := strconv.ParseUint(string(lx.s[lx.i-1:j]), 8, 32); err == nil {
				sb.WriteRune(rune(v))
			}
			lx.i = j
		default:
			sb.WriteRune(e)
		}
	}
	return sb.String()
}

// isHex reports a hexadecimal digit.
func isHex(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F'
}

// findClose returns the index just past the closer matching an opener
// already consumed before i, honouring nesting and quotes; len(s) if none.
func (lx *shLexer) findClose(i int, closer string) int {
	depth := 0
	open, close := rune(closer[0]), rune(closer[0])
	switch close {
	case ')':
		open = '('
	case '}':
		open = '{'
	}
	for i < len(lx.s) {
		c := lx.s[i]
		switch {
		case c == '\\':
			i += 2
			continue
		case c == '\'' && open != '{':
			i++
			for i < len(lx.s) && lx.s[i] != '\'' {
				i++
			}
		case c == '"':
			i++
			for i < len(lx.s) && lx.s[i] != '"' {
				if lx.s[i] == '\\' {
					i++
				}
				i++
			}
		case c == open:
			depth++
		case c == close:
			if depth == 0 {
				if len(closer) == 2 {
					if i+1 < len(lx.s) && lx.s[i+1] == close {
						return i + 2
					}
				} else {
					return i + 1
				}
			} else {
				depth--
			}
		}
		i++
	}
	return len(lx.s)
}
