package dispatcher

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/openai/openai-go/v3"
)

// ToolSpec is the plain-JSON form of one tool for the HTTP API and listings.
type ToolSpec struct {
	Name          string         `json:"name"`
	Description   string         `json:"description"`
	Parameters    map[string]any `json:"parameters"`
	Risk          Risk           `json:"risk"`
	NeedsApproval bool           `json:"needs_approval,omitempty"`
}

// Specs returns every tool as a ToolSpec, sorted by name.
func (r *Registry) Specs() []ToolSpec {
	tools := r.Tools()
	out := make([]ToolSpec, 0, len(tools))
	for _, t := range tools {
		out = append(out, ToolSpec{
			Name:          t.Name,
			Description:   t.Description,
			Parameters:    cloneJSON(t.Parameters),
			Risk:          t.Risk,
			NeedsApproval: t.NeedsApproval,
		})
	}
	return out
}

// OpenAITools returns the registry as the `tools` list of an OpenAI chat
// completion request (openai-go v3 param types), sorted by name.
func (r *Registry) OpenAITools() []openai.ChatCompletionToolUnionParam {
	tools := r.Tools()
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(tools))
	for _, t := range tools {
		out = append(out, openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name:        t.Name,
			Description: openai.String(t.Description),
			Parameters:  openai.FunctionParameters(cloneJSON(t.Parameters)),
		}))
	}
	return out
}

// OpenAIToolsJSON returns the wire form of the `tools` list as plain JSON
// values: [{"type":"function","function":{name, description, parameters}}].
func (r *Registry) OpenAIToolsJSON() []map[string]any {
	specs := r.Specs()
	out := make([]map[string]any, 0, len(specs))
	for _, s := range specs {
		out = append(out, map[string]any{
			"type": "function",
			"function": map[string]any{
				"name":        s.Name,
				"description": s.Description,
				"parameters":  s.Parameters,
			},
		})
	}
	return out
}

// SystemPrompt returns the text that describes the tools to the model,
// generated from the registry: one section per tool with its parameters.
func (r *Registry) SystemPrompt() string {
	var sb strings.Builder
	sb.WriteString("You can call these tools. Each runs inside an isolated sandbox with no network; ")
	sb.WriteString("the user's input files are read-only under the input folder and only a session has a writable work folder. ")
	sb.WriteString("Arguments must be a JSON object matching the tool's parameters; a refused call explains what to fix.\n")
	for _, t := range r.Tools() {
		fmt.Fprintf(&sb, "\n## %s (risk: %s", t.Name, t.Risk)
		if t.NeedsApproval {
			sb.WriteString(", needs human approval")
		}
		sb.WriteString(")\n")
		sb.WriteString(strings.TrimSpace(t.Description))
		sb.WriteString("\n")
		props := properties(t.Parameters)
		req := map[string]bool{}
		for _, n := range required(t.Parameters) {
			req[n] = true
		}
		for _, name := range sortedParamNames(props, req) {
			p, _ := props[name].(map[string]any)
			fmt.Fprintf(&sb, "- %s (%s", name, typeOf(p))
			if req[name] {
				sb.WriteString(", required")
			} else {
				sb.WriteString(", optional")
			}
			if d, ok := p["default"]; ok {
				fmt.Fprintf(&sb, ", default %s", compactJSON(d))
			}
			if e, ok := p["enum"]; ok {
				fmt.Fprintf(&sb, ", one of %s", compactJSON(e))
			}
			if lo, ok := p["minimum"]; ok {
				if hi, ok := p["maximum"]; ok {
					fmt.Fprintf(&sb, ", %v..%v", lo, hi)
				}
			}
			sb.WriteString(")")
			if d, _ := p["description"].(string); d != "" {
				sb.WriteString(": ")
				sb.WriteString(d)
			}
			sb.WriteString("\n")
		}
	}
	return sb.String()
}

// sortedParamNames lists required parameters first, then the rest, each sorted.
func sortedParamNames(props map[string]any, req map[string]bool) []string {
	var a, b []string
	for _, n := range sortedKeys(props) {
		if req[n] {
			a = append(a, n)
		} else {
			b = append(b, n)
		}
	}
	return append(a, b...)
}

// typeOf returns a property's JSON type, or "any".
func typeOf(p map[string]any) string {
	if t, ok := p["type"].(string); ok {
		return t
	}
	return "any"
}

// compactJSON marshals v without spaces, or "?" when it cannot.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// ToolCost is the schema size of one tool as sent to the model each round.
type ToolCost struct {
	Name   string `json:"name"`
	Chars  int    `json:"chars"`
	Tokens int    `json:"tokens"`
}

// Cost is the per-round price of sending the tool schemas.
type Cost struct {
	Tools []ToolCost `json:"tools"`
	// ToolsChars and ToolsTokens are for the whole compact `tools` list.
	ToolsChars  int `json:"tools_chars"`
	ToolsTokens int `json:"tools_tokens"`
	// PromptChars and PromptTokens are for SystemPrompt.
	PromptChars  int `json:"prompt_chars"`
	PromptTokens int `json:"prompt_tokens"`
	// Method says how tokens were estimated.
	Method string `json:"method"`
}

// TokenEstimateMethod describes EstimateTokens, for printing beside numbers.
const TokenEstimateMethod = "estimate: 4 characters ≈ 1 token (no offline tokenizer available)"

// EstimateTokens estimates the tokens of s as ceil(characters/4).
func EstimateTokens(s string) int {
	return (utf8.RuneCountInString(s) + 3) / 4
}

// SchemaCost measures the compact JSON of the OpenAI tools list and of
// the system prompt, per tool and in total, as sent in every model round.
func (r *Registry) SchemaCost() Cost {
	c := Cost{Method: TokenEstimateMethod}
	all := r.OpenAIToolsJSON()
	for _, t := range all {
		s := compactJSON(t)
		name, _ := t["function"].(map[string]any)["name"].(string)
		c.Tools = append(c.Tools, ToolCost{Name: name, Chars: utf8.RuneCountInString(s), Tokens: EstimateTokens(s)})
	}
	whole := compactJSON(all)
	c.ToolsChars, c.ToolsTokens = utf8.RuneCountInString(whole), EstimateTokens(whole)
	p := r.SystemPrompt()
	c.PromptChars, c.PromptTokens = utf8.RuneCountInString(p), EstimateTokens(p)
	return c
}
