package dispatcher

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// schemaURL is the resource name a tool's schema is compiled under.
func schemaURL(tool string) string { return "airlock:///tools/" + tool + ".json" }

// compileSchema compiles a tool's parameters (draft 2020-12 unless $schema says otherwise).
func compileSchema(tool string, params map[string]any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := schemaURL(tool)
	if err := c.AddResource(url, params); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	if t, _ := params["type"].(string); t != "object" {
		return nil, errors.New(`parameters schema must have "type": "object"`)
	}
	return sch, nil
}

// checkDefaults validates each property's default against that property's schema.
func checkDefaults(tool string, params map[string]any) error {
	for name, p := range properties(params) {
		pm, ok := p.(map[string]any)
		if !ok {
			continue
		}
		def, ok := pm["default"]
		if !ok {
			continue
		}
		sch, err := compileSchema(tool+"."+name, map[string]any{"type": "object", "properties": map[string]any{name: pm}})
		if err != nil {
			return fmt.Errorf("tool %q property %q: %w", tool, name, err)
		}
		if err := sch.Validate(map[string]any{name: def}); err != nil {
			return fmt.Errorf("tool %q property %q: default %v is invalid: %w", tool, name, def, err)
		}
	}
	return nil
}

// argError is a refusal before anything runs: Reason plus a message and
// per-field details.
type argError struct {
	Reason  string
	Message string
	Fields  map[string]string
}

// Error implements error.
func (e *argError) Error() string { return e.Reason + ": " + e.Message }

// decodeArguments accepts the arguments as a JSON object, as a JSON string
// holding an object (OpenAI's wire form), or empty/null meaning {}.
func decodeArguments(raw json.RawMessage) (map[string]any, *argError) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, &argError{Reason: "invalid_json", Message: "arguments are not valid JSON: " + err.Error()}
	}
	if s, ok := v.(string); ok {
		inner := bytes.TrimSpace([]byte(s))
		if len(inner) == 0 {
			return map[string]any{}, nil
		}
		v, err = decodeJSON(inner)
		if err != nil {
			return nil, &argError{Reason: "invalid_json", Message: "arguments are not valid JSON: " + err.Error()}
		}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &argError{Reason: "invalid_arguments", Message: fmt.Sprintf("arguments must be a JSON object, got %s", jsonKind(v)),
			Fields: map[string]string{"": "must be an object"}}
	}
	return obj, nil
}

// decodeJSON decodes exactly one JSON value with json.Number numbers.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("unexpected data after the JSON value")
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// validateArgs validates args against the tool schema and returns every
// violation keyed by JSON pointer, or nil.
func validateArgs(rt *registered, args map[string]any) map[string]string {
	err := rt.schema.Validate(args)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return map[string]string{"": err.Error()}
	}
	fields := map[string]string{}
	collectViolations(ve, rt.Parameters, fields)
	if len(fields) == 0 {
		fields[""] = "invalid arguments"
	}
	return fields
}

// collectViolations walks the error tree and records each leaf by field.
func collectViolations(ve *jsonschema.ValidationError, params map[string]any, out map[string]string) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collectViolations(c, params, out)
		}
		return
	}
	loc := jsonPointer(ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			addField(out, loc+"/"+escapePointer(m), "required property is missing")
		}
		return
	case *kind.AdditionalProperties:
		valid := strings.Join(sortedKeys(properties(params)), ", ")
		for _, p := range k.Properties {
			addField(out, loc+"/"+escapePointer(p), "unknown property; valid properties: "+valid)
		}
		return
	}
	msg := ""
	if u := ve.BasicOutput(); u != nil && u.Error != nil {
		msg = u.Error.String()
	}
	if msg == "" {
		msg = "invalid value"
	}
	addField(out, loc, msg)
}

// addField records msg under key, joining several messages for one field.
func addField(out map[string]string, key, msg string) {
	if prev, ok := out[key]; ok && prev != msg {
		out[key] = prev + "; " + msg
		return
	}
	out[key] = msg
}

// jsonPointer renders tokens as an RFC 6901 pointer ("" is the root).
func jsonPointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(escapePointer(t))
	}
	return sb.String()
}

// escapePointer escapes one pointer token.
func escapePointer(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// sortedKeys returns the keys of m, sorted.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// applyDefaults sets each absent top-level property that declares a default.
func applyDefaults(params map[string]any, args map[string]any) {
	for name, p := range properties(params) {
		pm, ok := p.(map[string]any)
		if !ok {
			continue
		}
		if _, present := args[name]; present {
			continue
		}
		if def, ok := pm["default"]; ok {
			args[name] = def
		}
	}
}

// describeFields renders field errors as sorted lines for the model.
func describeFields(fields map[string]string) string {
	var sb strings.Builder
	for _, k := range sortedKeys(fields) {
		name := k
		if name == "" {
			name = "(arguments)"
		}
		fmt.Fprintf(&sb, "- %s: %s\n", name, fields[k])
	}
	return strings.TrimRight(sb.String(), "\n")
}
