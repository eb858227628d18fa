package batchinput

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"strings"

	"github.com/airlock-dev/airlock/agent"
	"github.com/airlock-dev/airlock/batch"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// Parser builds the batches of one owner's requests.
type Parser struct {
	Owner string
	// Call checks a tool call as POST /v1/tool-calls does and builds its
	// dispatcher call (without a session).
	Call func(req *wire.ToolCallRequest) (dispatcher.Call, error)
	// Input resolves an input folder name to its host path.
	Input func(name string) (string, error)
	// Runs says whether run items may be sent (a model is configured).
	Runs bool
	// MaxItems bounds the items of one batch.
	MaxItems int
	// Environment is the batch's environment: the default of its items
	// (tool calls, the map template, runs) that name none ("": theirs).
	Environment string
}

// Parse builds the batch of a request body: JSONL items, or a JSON map
// spec (an object with "each", or "tool_call" alone with archives, the
// uploaded archives it maps over). Every refusal names what was wrong:
// bad_request, or too_large past MaxItems.
func (p Parser) Parse(data []byte, archives [][]byte) (batch.Spec, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return batch.Spec{}, invalid("request body is empty; send JSONL items or a map spec")
	}
	// A body that is one JSON object, on one line or pretty-printed over
	// many, may be a map spec; JSONL of several items is not one value.
	if trimmed[0] == '{' || archives != nil {
		var probe map[string]json.RawMessage
		if json.Unmarshal(trimmed, &probe) == nil {
			if _, ok := probe["each"]; ok || archives != nil {
				return p.mapSpec(trimmed, archives)
			}
		}
	}
	raws, err := batch.ParseJSONL(bytes.NewReader(data), p.MaxItems)
	if err != nil {
		return batch.Spec{}, err
	}
	spec := batch.Spec{Items: make([]batch.Item, 0, len(raws))}
	for _, r := range raws {
		it := batch.Item{CustomID: r.CustomID}
		if r.Run != nil {
			it.Run, err = p.run(r)
		} else {
			it.Call, err = p.item(r.ToolCall, r.Line)
		}
		if err != nil {
			return batch.Spec{}, err
		}
		spec.Items = append(spec.Items, it)
	}
	return spec, nil
}

// ParseForm builds the batch of a multipart request: an uploaded JSONL
// "file", or a "spec" (JSON) with "archive" files it maps over.
func (p Parser) ParseForm(form *multipart.Form) (batch.Spec, error) {
	if fs := form.File["file"]; len(fs) == 1 {
		f, err := fs[0].Open()
		if err != nil {
			return batch.Spec{}, invalid("could not read the uploaded file")
		}
		defer f.Close()
		data, err := io.ReadAll(f)
		if err != nil {
			return batch.Spec{}, invalid("could not read the uploaded file")
		}
		return p.Parse(data, nil)
	}
	specs := form.Value["spec"]
	if len(specs) != 1 {
		return batch.Spec{}, invalid(`send a "file" (JSONL) or a "spec" (JSON) with "archive" files`)
	}
	var archives [][]byte
	if arcs := form.File["archive"]; len(arcs) > 0 {
		var err error
		if archives, err = ReadArchives(arcs); err != nil {
			return batch.Spec{}, err
		}
	}
	return p.Parse([]byte(specs[0]), archives)
}

// item decodes and checks the tool call of JSONL line.
func (p Parser) item(raw json.RawMessage, line int) (*dispatcher.Call, error) {
	var req wire.ToolCallRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, invalid(fmt.Sprintf("line %d: not a valid tool call: %v", line, err))
	}
	return p.call(req, fmt.Sprintf("line %d", line))
}

// call checks a tool call (of where: a line, or the template) and builds
// its dispatcher call.
func (p Parser) call(req wire.ToolCallRequest, where string) (*dispatcher.Call, error) {
	bad := func(msg string) error { return invalid(where + ": " + msg) }
	if req.SessionID != "" {
		return nil, bad(`"session_id" is not allowed in batch items; each item runs in a fresh sandbox`)
	}
	if len(req.Function.Arguments) > 0 && req.Function.Arguments[0] == '"' {
		var s string // OpenAI sends arguments as a JSON string
		if json.Unmarshal(req.Function.Arguments, &s) == nil {
			req.Function.Arguments = json.RawMessage(s)
		}
	}
	if req.Environment == "" {
		req.Environment = p.Environment
	}
	call, err := p.Call(&req)
	if err != nil {
		return nil, bad(err.Error())
	}
	call.ApprovalTools, call.RequireApproval = nil, nil
	return &call, nil
}

// run checks a run item; without a model configured it is refused.
func (p Parser) run(r batch.RawItem) (*agent.RunRequest, error) {
	if !p.Runs {
		return nil, invalid(fmt.Sprintf("line %d: run items need a model, and none is configured on this server", r.Line))
	}
	var body struct {
		Goal     string          `json:"goal"`
		Messages json.RawMessage `json:"messages"`
		Model    string          `json:"model"`
		MaxSteps int             `json:"max_steps"`
		Input    string          `json:"input"`
	}
	dec := json.NewDecoder(bytes.NewReader(r.Run))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return nil, invalid(fmt.Sprintf("line %d: not a valid run: %v", r.Line, err))
	}
	if strings.TrimSpace(body.Goal) == "" && len(body.Messages) == 0 {
		return nil, invalid(fmt.Sprintf(`line %d: a run needs "goal" or "messages"`, r.Line))
	}
	mount, err := p.Input(body.Input)
	if err != nil {
		return nil, invalid(fmt.Sprintf("line %d: %s", r.Line, err))
	}
	return &agent.RunRequest{Goal: body.Goal, Messages: body.Messages, Model: body.Model, MaxSteps: body.MaxSteps,
		Mount: mount, Owner: p.Owner, Environment: p.Environment}, nil
}

// mapSpec expands a map spec over its input folder (or archives).
func (p Parser) mapSpec(data []byte, archives [][]byte) (batch.Spec, error) {
	var m wire.BatchMapSpec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return batch.Spec{}, invalid("malformed map spec: " + err.Error())
	}
	if m.ToolCall == nil {
		return batch.Spec{}, invalid(`a map spec needs "tool_call"`)
	}
	tmpl, err := p.call(*m.ToolCall, "the tool_call template")
	if err != nil {
		return batch.Spec{}, err
	}
	return Expand(m, *tmpl, p.Input, archives, p.MaxItems)
}
