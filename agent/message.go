package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
)

// message is one conversation entry, kept in a provider-neutral form so the
// loop can estimate and shorten it before every request.
type message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`   // assistant only
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool only
	Shortened  bool       `json:"shortened,omitempty"`    // tool content already shortened
}

// toolCall is one normalised call from the model.
type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON text as echoed back to the model
	// ArgsErr is set when Arguments are not a JSON object; the call is
	// answered with an error and not run (not stored: the answer is).
	ArgsErr error `json:"-"`
}

// chars is the message's size in characters, for token estimates.
func (m message) chars() int {
	n := len(m.Content) + len(m.Role) + 4
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Name) + len(c.Arguments) + 8
	}
	return n
}

// toParams converts the conversation to openai-go request messages.
func toParams(msgs []message) []openai.ChatCompletionMessageParamUnion {
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case "system":
			out = append(out, openai.SystemMessage(m.Content))
		case "user":
			out = append(out, openai.UserMessage(m.Content))
		case "tool":
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		case "assistant":
			var a openai.ChatCompletionAssistantMessageParam
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name: c.Name, Arguments: c.Arguments,
						},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	return out
}

// wireMessage is an OpenAI chat message as a client sends it in
// RunRequest.Messages.
type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

// initialMessages builds the conversation a run starts from.
func initialMessages(system string, req RunRequest) ([]message, error) {
	msgs := []message{{Role: "system", Content: system}}
	if len(req.Messages) > 0 && string(req.Messages) != "null" {
		var in []wireMessage
		if err := json.Unmarshal(req.Messages, &in); err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
		for i, w := range in {
			m := message{Role: w.Role, Content: contentText(w.Content), ToolCallID: w.ToolCallID}
			switch w.Role {
			case "developer":
				m.Role = "system"
			case "system", "user", "tool":
			case "assistant":
				for _, c := range w.ToolCalls {
					args, _ := argumentsText(c.Function.Arguments)
					m.ToolCalls = append(m.ToolCalls, toolCall{ID: c.ID, Name: c.Function.Name, Arguments: args})
				}
			default:
				return nil, fmt.Errorf("messages[%d]: unknown role %q", i, w.Role)
			}
			msgs = append(msgs, m)
		}
	}
	if goal := strings.TrimSpace(req.Goal); goal != "" {
		msgs = append(msgs, message{Role: "user", Content: goal})
	}
	if len(msgs) == 1 {
		return nil, errors.New("a goal or messages are required")
	}
	return msgs, nil
}

// contentText reads a message content that is a string, null, or an array
// of text parts.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}
