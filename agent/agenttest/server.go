package agenttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Turn answers one chat completions request.
type Turn func(req Request) Reply

// Request is a chat completions request as the server received it.
type Request struct {
	Ctx           context.Context // done when the client goes away
	Body          []byte
	Authorization string
	Model         string
	Stream        bool
	Messages      []Message
	Tools         []string // names of the tools offered; empty when none
	ToolChoice    json.RawMessage
}

// Message is one request message.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"-"`
	ToolCallID string     `json:"tool_call_id"`
	ToolCalls  []ToolCall `json:"tool_calls"`
}

// ToolCall is a tool call in a request's assistant message.
type ToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// LastTool returns the content of the last role "tool" message, or "".
func (r Request) LastTool() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "tool" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Reply is a scripted answer. Status other than 0/200 answers an HTTP error
// with ErrorBody. Chunks (streaming) or Raw (non-streaming) send exact
// payloads instead of ones built from Content, Calls and Usage.
type Reply struct {
	Status    int
	ErrorBody string
	Header    map[string]string

	Content string
	Calls   []Call
	Usage   *Usage

	Chunks []string // raw SSE data payloads, "[DONE]" appended
	Raw    string   // raw JSON body
}

// Call is a scripted tool call. Arguments are sent as a JSON string (the
// OpenAI form) unless ArgumentsObject is set, which is sent as is (the
// quirk some servers have). Empty ID or Name are sent empty.
type Call struct {
	ID              string
	Name            string
	Arguments       string
	ArgumentsObject json.RawMessage
}

// Usage is the usage block of a reply.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// Say answers with text.
func Say(text string) Turn { return func(Request) Reply { return Reply{Content: text} } }

// CallTools answers with tool calls.
func CallTools(calls ...Call) Turn { return func(Request) Reply { return Reply{Calls: calls} } }

// Fail answers with an HTTP error status.
func Fail(status int) Turn {
	return func(Request) Reply {
		return Reply{Status: status, ErrorBody: `{"error":{"message":"scripted failure","type":"server_error"}}`}
	}
}

// Server is the fake server. Its URL is the base URL for the agent.
type Server struct {
	URL string
	srv *httptest.Server

	mu    sync.Mutex
	turns []Turn
	next  int
	reqs  []Request
	errs  []string
}

// NewServer starts a server playing turns in order. Close it when done.
func NewServer(turns ...Turn) *Server {
	s := &Server{turns: turns}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/v1"
	return s
}

// Add appends turns to the script.
func (s *Server) Add(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Errors returns problems the server saw (script exhausted, bad requests).
func (s *Server) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}

// handle answers one request with the next turn.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, err := parseRequest(body)
	req.Ctx, req.Authorization = r.Context(), r.Header.Get("Authorization")
	s.mu.Lock()
	if err != nil || r.URL.Path != "/v1/chat/completions" {
		s.errs = append(s.errs, fmt.Sprintf("bad request %s: %v", r.URL.Path, err))
		s.mu.Unlock()
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	s.reqs = append(s.reqs, req)
	var turn Turn
	if s.next < len(s.turns) {
		turn = s.turns[s.next]
		s.next++
	}
	s.mu.Unlock()
	if turn == nil {
		s.mu.Lock()
		s.errs = append(s.errs, "script exhausted")
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"script exhausted","type":"invalid_request_error"}}`)
		return
	}
	rep := turn(req)
	for k, v := range rep.Header {
		w.Header().Set(k, v)
	}
	if rep.Status != 0 && rep.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		_, _ = io.WriteString(w, rep.ErrorBody)
		return
	}
	if req.Stream {
		writeStream(w, rep)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if rep.Raw != "" {
		_, _ = io.WriteString(w, rep.Raw)
		return
	}
	_, _ = w.Write(completionJSON(rep))
}

// parseRequest decodes the parts of a request tests look at.
func parseRequest(body []byte) (Request, error) {
	var in struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Message
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	req := Request{Body: body}
	if err := json.Unmarshal(body, &in); err != nil {
		return req, err
	}
	req.Model, req.Stream, req.ToolChoice = in.Model, in.Stream, in.ToolChoice
	for _, m := range in.Messages {
		msg := m.Message
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			msg.Content = s
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range in.Tools {
		req.Tools = append(req.Tools, t.Function.Name)
	}
	return req, nil
}

// wireArgs is a call's arguments as sent.
func wireArgs(c Call) json.RawMessage {
	if c.ArgumentsObject != nil {
		return c.ArgumentsObject
	}
	b, _ := json.Marshal(c.Arguments)
	return b
}

// completionJSON builds a non-streamed completion.
func completionJSON(rep Reply) []byte {
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
		var calls []map[string]any
		for _, c := range rep.Calls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": wireArgs(c)}})
		}
		msg["tool_calls"] = calls
		if rep.Content == "" {
			msg["content"] = nil
		}
	}
	out := map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "test",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
	}
	if rep.Usage != nil {
		out["usage"] = rep.Usage
	}
	b, _ := json.Marshal(out)
	return b
}

// writeStream sends a reply as server-sent events.
func writeStream(w http.ResponseWriter, rep Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	send := func(data string) {
		_, _ = fmt.Fprintf(w, "data: %s\n\n", data)
		if fl != nil {
			fl.Flush()
		}
	}
	chunks := rep.Chunks
	if chunks == nil {
		chunks = streamChunks(rep)
	}
	for _, c := range chunks {
		send(c)
	}
	send("[DONE]")
}

// streamChunks builds the chunks of a reply the way OpenAI streams them:
// content in pieces, each call's id and name first, then its arguments in
// two fragments, the finish reason, then usage.
func streamChunks(rep Reply) []string {
	chunk := func(delta map[string]any, finish any) string {
		b, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1, "model": "test",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		})
		return string(b)
	}
	out := []string{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	if rep.Content != "" {
		half := len(rep.Content) / 2
		for half > 0 && !utf8Start(rep.Content[half]) {
			half--
		}
		out = append(out, chunk(map[string]any{"content": rep.Content[:half]}, nil),
			chunk(map[string]any{"content": rep.Content[half:]}, nil))
	}
	for i, c := range rep.Calls {
		tc := func(m map[string]any) map[string]any {
			m["index"] = i
			return map[string]any{"tool_calls": []any{m}}
		}
		if c.ArgumentsObject != nil {
			out = append(out, chunk(tc(map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.ArgumentsObject}}), nil))
			continue
		}
		out = append(out, chunk(tc(map[string]any{"id": c.ID, "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}), nil))
		half := len(c.Arguments) / 2
		for half > 0 && !utf8Start(c.Arguments[half]) {
			half--
		}
		for _, part := range []string{c.Arguments[:half], c.Arguments[half:]} {
			if part != "" {
				out = append(out, chunk(tc(map[string]any{"function": map[string]any{"arguments": part}}), nil))
			}
		}
	}
	finish := "stop"
	if len(rep.Calls) > 0 {
		finish = "tool_calls"
	}
	out = append(out, chunk(map[string]any{}, finish))
	if rep.Usage != nil {
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk",
			"created": 1, "model": "test", "choices": []any{}, "usage": rep.Usage})
		out = append(out, string(b))
	}
	return out
}

// utf8Start reports whether b starts a UTF-8 sequence.
func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Text is a convenience for tests: the content of every message of a role.
func (r Request) Text(role string) string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == role {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}
