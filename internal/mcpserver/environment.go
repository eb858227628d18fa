package mcpserver

import (
	"encoding/json"
	"maps"
)

// environmentArg is the tool argument naming the environment a call runs
// in (issue 28); the MCP server takes it out before the dispatcher sees
// the arguments.
const environmentArg = "environment"

// withEnvironment returns a tool's parameter schema with the environment
// argument added (the registry's schema is left as it is).
func withEnvironment(params any) any {
	m, ok := params.(map[string]any)
	if !ok {
		return params
	}
	props, _ := m["properties"].(map[string]any)
	out := maps.Clone(m)
	p := maps.Clone(props)
	if p == nil {
		p = map[string]any{}
	}
	p[environmentArg] = map[string]any{"type": "string", "maxLength": 40,
		"description": "The environment to run this call in, one-shot (outside this conversation's session): python, shell or a custom one the key may use. Leave it out to run in the session."}
	out["properties"] = p
	return out
}

// splitEnvironment takes the environment argument out of a call's
// arguments: the name, the other arguments, and whether one was given.
func splitEnvironment(args json.RawMessage) (string, json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return "", args, false
	}
	raw, ok := m[environmentArg]
	if !ok {
		return "", args, false
	}
	var env string
	if json.Unmarshal(raw, &env) != nil || env == "" {
		return "", args, false
	}
	delete(m, environmentArg)
	rest, err := json.Marshal(m)
	if err != nil {
		return "", args, false
	}
	return env, rest, true
}
