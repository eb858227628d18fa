package agent

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
)

// estimateTokens estimates a token count as characters/4.
func estimateTokens(chars int) int { return (chars + 3) / 4 }

// conversationTokens estimates the tokens of a request: messages plus the
// tool schemas.
func conversationTokens(msgs []message, schemaTokens int) int {
	n := 0
	for _, m := range msgs {
		n += m.chars()
	}
	return estimateTokens(n) + schemaTokens
}

// schemaTokens estimates what the tool list costs in every request.
func schemaTokens(tools []openai.ChatCompletionToolUnionParam) int {
	if len(tools) == 0 {
		return 0
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return 0
	}
	return estimateTokens(len(b))
}

// shortenContext shortens the oldest tool results, one at a time, until
// the estimate is under limit tokens. The system prompt and the latest turn
// (the last assistant message and what follows it) are never touched. It
// returns how many results it shortened.
func shortenContext(msgs []message, schema, limit, keep int) int {
	if limit <= 0 || conversationTokens(msgs, schema) <= limit {
		return 0
	}
	latest := len(msgs)
	for i := len(msgs) - 1; i > 0; i-- {
		if msgs[i].Role == "assistant" {
			latest = i
			break
		}
	}
	n := 0
	for i := 1; i < latest; i++ {
		m := &msgs[i]
		if m.Role != "tool" || m.Shortened || len(m.Content) <= keep {
			continue
		}
		m.Content = shorten(m.Content, keep)
		m.Shortened = true
		n++
		if conversationTokens(msgs, schema) <= limit {
			break
		}
	}
	return n
}

// shorten keeps about keep bytes of s, head and tail, around a marker.
func shorten(s string, keep int) string {
	head, tail := keep*2/3, keep/3
	h := s[:head]
	for len(h) > 0 && !utf8.ValidString(h) {
		h = h[:len(h)-1]
	}
	t := s[len(s)-tail:]
	for len(t) > 0 && !utf8.ValidString(t) {
		t = t[1:]
	}
	omitted := len(s) - len(h) - len(t)
	return fmt.Sprintf("%s\n[... %d bytes of this old tool result omitted to fit the context budget ...]\n%s", h, omitted, t)
}
