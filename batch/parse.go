package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/airlock-dev/airlock/core"
)

// RawItem is one parsed JSONL line: the custom id and either a tool call
// (from "tool_call" or the OpenAI shape's "body") or a run.
type RawItem struct {
	Line     int
	CustomID string
	ToolCall json.RawMessage
	Run      json.RawMessage
}

type rawLine struct {
	CustomID *string         `json:"custom_id"`
	ToolCall json.RawMessage `json:"tool_call"`
	Run      json.RawMessage `json:"run"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// LineError builds the 400 error for line n.
func LineError(n int, format string, args ...any) error {
	return core.E("batch.parse", core.ErrInvalid, fmt.Errorf("line %d: %s", n, fmt.Sprintf(format, args...)))
}

// ParseJSONL reads JSONL items; any bad line or duplicate custom_id is a
// core.ErrInvalid error naming the line and what was wrong.
func ParseJSONL(r io.Reader, maxItems int) ([]RawItem, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	seen := map[string]int{}
	var out []RawItem
	n := 0
	for sc.Scan() {
		n++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var l rawLine
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, LineError(n, "not a valid item: %v", err)
		}
		if l.CustomID == nil || strings.TrimSpace(*l.CustomID) == "" {
			return nil, LineError(n, `"custom_id" is required`)
		}
		id := *l.CustomID
		if len(id) > 512 {
			return nil, LineError(n, `"custom_id" is over 512 bytes`)
		}
		if first, dup := seen[id]; dup {
			return nil, LineError(n, "duplicate custom_id %q (first on line %d)", id, first)
		}
		seen[id] = n
		it := RawItem{Line: n, CustomID: id}
		kinds := 0
		if len(l.ToolCall) > 0 {
			it.ToolCall, kinds = l.ToolCall, kinds+1
		}
		if len(l.Run) > 0 {
			it.Run, kinds = l.Run, kinds+1
		}
		if l.Method != "" || l.URL != "" || len(l.Body) > 0 {
			if l.Method != "POST" {
				return nil, LineError(n, `"method" must be "POST"`)
			}
			if l.URL != "/v1/tool-calls" {
				return nil, LineError(n, `"url" must be "/v1/tool-calls", not %q`, l.URL)
			}
			if len(l.Body) == 0 {
				return nil, LineError(n, `"body" is required with "method" and "url"`)
			}
			it.ToolCall, kinds = l.Body, kinds+1
		}
		if kinds != 1 {
			return nil, LineError(n, `exactly one of "tool_call", "run" or "method"/"url"/"body" is required`)
		}
		out = append(out, it)
		if maxItems > 0 && len(out) > maxItems {
			return nil, core.E("batch.parse", core.ErrTooLarge, fmt.Errorf("more than %d items", maxItems))
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, LineError(n+1, "line is over 16 MiB")
		}
		return nil, err
	}
	if len(out) == 0 {
		return nil, core.E("batch.parse", core.ErrInvalid, errors.New("the batch has no items"))
	}
	return out, nil
}
