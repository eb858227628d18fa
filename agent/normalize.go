package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// wireToolCall is a tool call as servers send it, before normalisation.
// Arguments stay raw because some servers send an object instead of the
// JSON-encoded string OpenAI specifies.
type wireToolCall struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// wireUsage is the usage block of a response or of the last stream chunk.
type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// wireCompletion is a non-streamed chat completion.
type wireCompletion struct {
	Choices []struct {
		Message struct {
			Content      json.RawMessage `json:"content"`
			Refusal      string          `json:"refusal"`
			ToolCalls    []wireToolCall  `json:"tool_calls"`
			FunctionCall *wireFunction   `json:"function_call"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
}

// wireFunction is the legacy single function_call form.
type wireFunction struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// reply is one model answer, normalised.
type reply struct {
	Content      string
	ToolCalls    []toolCall
	FinishReason string
	Usage        *wireUsage // nil when the server reported none
}

// parseCompletion normalises a non-streamed response body.
func parseCompletion(raw []byte) (reply, error) {
	var wc wireCompletion
	if err := json.Unmarshal(raw, &wc); err != nil {
		return reply{}, fmt.Errorf("decode completion: %w", err)
	}
	if len(wc.Choices) == 0 {
		return reply{}, errors.New("completion has no choices")
	}
	ch := wc.Choices[0]
	r := reply{Content: contentText(ch.Message.Content), FinishReason: ch.FinishReason, Usage: wc.Usage}
	if r.Content == "" && ch.Message.Refusal != "" {
		r.Content = ch.Message.Refusal
	}
	for _, w := range ch.Message.ToolCalls {
		args, err := argumentsText(w.Function.Arguments)
		r.ToolCalls = append(r.ToolCalls, toolCall{ID: w.ID, Name: w.Function.Name, Arguments: args, ArgsErr: err})
	}
	if len(r.ToolCalls) == 0 && ch.Message.FunctionCall != nil && ch.Message.FunctionCall.Name != "" {
		args, err := argumentsText(ch.Message.FunctionCall.Arguments)
		r.ToolCalls = append(r.ToolCalls, toolCall{Name: ch.Message.FunctionCall.Name, Arguments: args, ArgsErr: err})
	}
	return r, nil
}

// argumentsText turns raw arguments into the JSON text of an object:
// a JSON string is decoded (twice when a server double-encoded it), an
// object is taken as is, and empty or null means {}. The error says why
// the text is not a JSON object; the text is returned anyway so the
// model's words can be echoed back.
func argumentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "{}", nil
	}
	text := string(raw)
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &text); err != nil {
			return string(raw), fmt.Errorf("arguments: %w", err)
		}
	}
	return objectText(text)
}

// objectText checks that text is a JSON object (unwrapping one level of
// string encoding) and returns it compacted.
func objectText(text string) (string, error) {
	t := bytes.TrimSpace([]byte(text))
	if len(t) == 0 {
		return "{}", nil
	}
	if t[0] == '"' {
		var inner string
		if json.Unmarshal(t, &inner) == nil {
			it := bytes.TrimSpace([]byte(inner))
			if len(it) > 0 && it[0] == '{' && json.Valid(it) {
				t = it
			}
		}
	}
	if !json.Valid(t) {
		return text, errors.New("arguments are not valid JSON")
	}
	if t[0] != '{' {
		return text, errors.New("arguments must be a JSON object")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, t); err != nil {
		return text, fmt.Errorf("arguments: %w", err)
	}
	return b.String(), nil
}

// idAssigner gives every call of a run a unique id, keeping the model's id
// when it is present and not seen before.
type idAssigner struct {
	seen map[string]bool
	n    int
}

// newIDAssigner returns an empty assigner.
func newIDAssigner() *idAssigner { return &idAssigner{seen: map[string]bool{}} }

// observe records ids already in the conversation.
func (a *idAssigner) observe(id string) {
	if id != "" {
		a.seen[id] = true
	}
}

// assign fixes missing and duplicate ids in place and reports how many it
// changed.
func (a *idAssigner) assign(calls []toolCall) int {
	changed := 0
	for i := range calls {
		id := calls[i].ID
		if id == "" || a.seen[id] {
			for {
				a.n++
				id = "call_airlock_" + strconv.Itoa(a.n)
				if !a.seen[id] {
					break
				}
			}
			calls[i].ID = id
			changed++
		}
		a.seen[id] = true
	}
	return changed
}
