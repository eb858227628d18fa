package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// wireChunk is one streamed chat completion chunk.
type wireChunk struct {
	Choices []struct {
		Delta struct {
			Content      json.RawMessage `json:"content"`
			Refusal      string          `json:"refusal"`
			ToolCalls    []wireToolCall  `json:"tool_calls"`
			FunctionCall *wireFunction   `json:"function_call"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
}

// streamCall is a tool call being assembled from deltas.
type streamCall struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

// accumulator assembles streamed chunks into a reply. It splits calls that
// share one index when a new id, or a new name after complete arguments,
// appears (servers such as Ollama send every call with index 0).
type accumulator struct {
	content strings.Builder
	refusal strings.Builder
	calls   []*streamCall
	open    map[int]*streamCall // the call each index currently appends to
	finish  string
	usage   *wireUsage
}

// newAccumulator returns an empty accumulator.
func newAccumulator() *accumulator { return &accumulator{open: map[int]*streamCall{}} }

// add folds one chunk's raw JSON in.
func (a *accumulator) add(raw []byte) error {
	var c wireChunk
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("decode chunk: %w", err)
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	for _, ch := range c.Choices {
		a.content.WriteString(contentText(ch.Delta.Content))
		a.refusal.WriteString(ch.Delta.Refusal)
		for _, d := range ch.Delta.ToolCalls {
			a.addCall(d)
		}
		if f := ch.Delta.FunctionCall; f != nil {
			var d wireToolCall
			d.Function.Name, d.Function.Arguments = f.Name, f.Arguments
			a.addCall(d)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish = *ch.FinishReason
		}
		break // only the first choice is used
	}
	return nil
}

// addCall folds one tool call delta in.
func (a *accumulator) addCall(d wireToolCall) {
	idx := -1
	if d.Index != nil {
		idx = *d.Index
	}
	cur := a.open[idx]
	if cur == nil || a.startsNew(cur, d) {
		cur = &streamCall{index: idx}
		a.calls = append(a.calls, cur)
		a.open[idx] = cur
	}
	if d.ID != "" {
		cur.id = d.ID
	}
	if d.Function.Name != "" && cur.name == "" {
		cur.name = d.Function.Name
	}
	cur.args.WriteString(argumentFragment(d.Function.Arguments))
}

// startsNew reports whether delta d begins a new call rather than
// continuing cur.
func (a *accumulator) startsNew(cur *streamCall, d wireToolCall) bool {
	if d.ID != "" && cur.id != "" && d.ID != cur.id {
		return true
	}
	if d.ID == "" && d.Function.Name != "" && cur.name != "" {
		// A name again: a new call if the current one's arguments are
		// complete (a server repeating the name mid-call keeps appending).
		done := strings.TrimSpace(cur.args.String())
		return done != "" && json.Valid([]byte(done))
	}
	return false
}

// argumentFragment is the text a delta adds to the arguments: a string
// fragment, or an object sent whole.
func argumentFragment(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// reply returns the assembled answer.
func (a *accumulator) reply() reply {
	r := reply{Content: a.content.String(), FinishReason: a.finish, Usage: a.usage}
	if r.Content == "" {
		r.Content = a.refusal.String()
	}
	for _, c := range a.calls {
		if c.name == "" && strings.TrimSpace(c.args.String()) == "" && c.id == "" {
			continue
		}
		text, err := objectText(c.args.String())
		r.ToolCalls = append(r.ToolCalls, toolCall{ID: c.id, Name: c.name, Arguments: text, ArgsErr: err})
	}
	return r
}
