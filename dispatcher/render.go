package dispatcher

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/core"
)

// Truncate shortens s to at most maxChars characters and maxBytes bytes
// (a limit <= 0 is ignored), keeping the head and the tail around a marker
// that says how many characters were left out. Cuts fall on character
// boundaries; invalid UTF-8 is first replaced by U+FFFD. It reports
// whether anything was cut.
func Truncate(s string, maxChars, maxBytes int) (string, bool) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	n := utf8.RuneCountInString(s)
	if (maxChars <= 0 || n <= maxChars) && (maxBytes <= 0 || len(s) <= maxBytes) {
		return s, false
	}
	// The marker's length depends on the omitted count; reserve for the
	// widest possible count (n).
	marker := func(omitted int) string {
		return "\n\n[... " + strconv.Itoa(omitted) + " characters truncated ...]\n\n"
	}
	worst := marker(n)
	charBudget, byteBudget := n, len(s)
	if maxChars > 0 {
		charBudget = maxChars - utf8.RuneCountInString(worst)
	}
	if maxBytes > 0 {
		byteBudget = min(byteBudget, maxBytes-len(worst))
	}
	if charBudget <= 0 || byteBudget <= 0 {
		// The budget cannot even hold the marker: cut hard.
		return cutPrefix(s, max(maxChars, 0), max(maxBytes, 0)), true
	}
	headChars, headBytes := charBudget-charBudget/2, byteBudget-byteBudget/2
	head := cutPrefix(s, headChars, headBytes)
	tail := cutSuffix(s[len(head):], charBudget-utf8.RuneCountInString(head), byteBudget-len(head))
	omitted := n - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
	return head + marker(omitted) + tail, true
}

// cutPrefix returns the longest prefix of s with at most chars characters
// and bytes bytes (<= 0 means no limit for chars only when bytes > 0).
func cutPrefix(s string, chars, bytes int) string {
	i, c := 0, 0
	for i < len(s) {
		_, w := utf8.DecodeRuneInString(s[i:])
		if (chars > 0 && c+1 > chars) || (bytes > 0 && i+w > bytes) || (chars <= 0 && bytes <= 0) {
			break
		}
		i += w
		c++
	}
	return s[:i]
}

// cutSuffix returns the longest suffix of s with at most chars characters and bytes bytes.
func cutSuffix(s string, chars, bytes int) string {
	if chars <= 0 || bytes <= 0 {
		return ""
	}
	j, c := len(s), 0
	for j > 0 {
		_, w := utf8.DecodeLastRuneInString(s[:j])
		if c+1 > chars || len(s)-(j-w) > bytes {
			break
		}
		j -= w
		c++
	}
	return s[j:]
}

// renderSandbox renders a sandbox result as the tool message text: a
// status line, then stdout, stderr, artifact names (never their bytes)
// and warnings.
func renderSandbox(res core.Result) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "status: %s", res.Status)
	if res.Status != core.StatusRejected {
		fmt.Fprintf(&sb, " (exit code %d, %d ms)", res.ExitCode, res.DurationMS)
	}
	sb.WriteByte('\n')
	if res.Message != "" {
		sb.WriteString("message: " + res.Message + "\n")
	}
	if res.Truncated {
		sb.WriteString("note: the sandbox cut the output at its size limit\n")
	}
	if res.SessionEnded {
		sb.WriteString("note: the session ended; its variables and files are gone, start a new session\n")
	}
	if res.Resumed {
		sb.WriteString(resumedNote(res) + "\n")
	}
	if res.Stdout != "" {
		sb.WriteString("--- stdout ---\n")
		sb.WriteString(strings.TrimRight(res.Stdout, "\n"))
		sb.WriteByte('\n')
	}
	if res.Stderr != "" {
		sb.WriteString("--- stderr ---\n")
		sb.WriteString(strings.TrimRight(res.Stderr, "\n"))
		sb.WriteByte('\n')
	}
	if res.Stdout == "" && res.Stderr == "" && res.Status == core.StatusOK {
		sb.WriteString("(no output)\n")
	}
	if len(res.Artifacts) > 0 {
		sb.WriteString("--- artifacts ---\n")
		for _, a := range res.Artifacts {
			fmt.Fprintf(&sb, "%s (%s, %d bytes)\n", a.Name, a.MIME, a.Size)
		}
	}
	for _, w := range res.Warnings {
		sb.WriteString("warning: " + w + "\n")
	}
	return strings.TrimRight(sb.String(), "\n")
}
