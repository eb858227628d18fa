package dispatcher

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/airlock-dev/airlock/core"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Risk is how much harm a tool can do, shown to operators and the model.
type Risk string

// Risk levels.
const (
	RiskLow    Risk = "low"    // reads only
	RiskMedium Risk = "medium" // writes inside the sandbox
	RiskHigh   Risk = "high"   // runs arbitrary code inside the sandbox
)

// CheckKind names the policy family applied to one argument.
type CheckKind string

// Policy families a Tool can ask for on its arguments.
const (
	CheckShell     CheckKind = "shell"      // the argument is a shell command
	CheckPython    CheckKind = "python"     // the argument is Python source
	CheckReadPath  CheckKind = "read_path"  // the argument is a path that is read
	CheckWritePath CheckKind = "write_path" // the argument is a path that is written
	CheckSQL       CheckKind = "sql"        // the argument is one SQL statement
)

// Check asks the policy to inspect the string argument Arg as Kind.
type Check struct {
	Arg  string
	Kind CheckKind
}

// Tool is the single declaration of one tool: what the model is told and
// what runs are both generated from it.
type Tool struct {
	// Name is short and verb first, [a-zA-Z0-9_-]{1,64}.
	Name string
	// Description says when to use the tool.
	Description string
	// Parameters is the JSON Schema of the arguments object, with types,
	// ranges, enums and defaults.
	Parameters map[string]any
	// Risk is shown in listings and the system prompt.
	Risk Risk
	// NeedsApproval holds every call for Approve/Reject.
	NeedsApproval bool
	// Checks are the policy inspections of the arguments.
	Checks []Check
	// Prepare turns validated arguments into an Action.
	Prepare PrepareFunc
}

// PrepareFunc turns a validated Invocation into an Action: the sandbox
// request to run, or content to answer without running anything. A
// *Refusal error rejects the call.
type PrepareFunc func(ctx context.Context, inv Invocation) (Action, error)

// Invocation is what a Tool's Prepare gets: the call and its validated
// arguments with defaults applied.
type Invocation struct {
	Call Call
	Args Args
}

// Action is Prepare's answer: either a sandbox Request to execute, or
// Content to return directly without running anything.
type Action struct {
	Request *core.Request
	Content string
	// SandboxPolicy marks a generated program that reports in-sandbox
	// policy refusals as a stderr line "AIRLOCK_POLICY <rule>: <message>"
	// with exit code 3; Run turns those into rejected results. Leave it
	// false for user code, which could print that line itself.
	SandboxPolicy bool
	// Network and Status go with an answer made in Airlock (Request nil):
	// the connections it attempted (fetch_url) and its status ("" is
	// StatusOK).
	Network []core.NetworkAttempt
	Status  Status
}

// Refusal is an error Prepare returns to refuse a call: Run answers
// StatusRejected with Reason and Message instead of an error result.
type Refusal struct {
	Reason  string
	Message string
}

// Error implements error.
func (r *Refusal) Error() string { return r.Reason + ": " + r.Message }

// Refuse returns a *Refusal.
func Refuse(reason, message string) error { return &Refusal{Reason: reason, Message: message} }

// Args are validated arguments, decoded with json.Number for numbers.
type Args map[string]any

// String returns the string argument name, or "".
func (a Args) String(name string) string {
	s, _ := a[name].(string)
	return s
}

// Int returns the integer argument name, or 0.
func (a Args) Int(name string) int64 {
	switch v := a[name].(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if f, err := v.Float64(); err == nil {
			return int64(f)
		}
	case float64:
		return int64(v)
	case int:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

// Bool returns the boolean argument name, or false.
func (a Args) Bool(name string) bool {
	b, _ := a[name].(bool)
	return b
}

// Has reports whether the argument name is present.
func (a Args) Has(name string) bool {
	_, ok := a[name]
	return ok
}

// registered is a Tool with its compiled schema.
type registered struct {
	Tool
	schema *jsonschema.Schema
}

// Registry holds the tools by name. Register tools at start-up; lookups are
// safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*registered
}

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{tools: map[string]*registered{}}
}

// Register adds t. It panics on an empty, malformed or duplicate name, a
// nil Prepare, a schema that does not compile, a default that its own
// property schema refuses, or a Check naming an undeclared string argument:
// these are programming errors to catch at start-up.
func (r *Registry) Register(t Tool) {
	if t.Name == "" {
		panic("dispatcher: Register: empty tool name")
	}
	if !toolNameRE.MatchString(t.Name) {
		panic(fmt.Sprintf("dispatcher: Register: tool name %q must match %s", t.Name, toolNameRE))
	}
	if t.Prepare == nil {
		panic(fmt.Sprintf("dispatcher: Register: tool %q has no Prepare", t.Name))
	}
	if strings.TrimSpace(t.Description) == "" {
		panic(fmt.Sprintf("dispatcher: Register: tool %q has no description", t.Name))
	}
	if t.Parameters == nil {
		t.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	t.Parameters = cloneJSON(t.Parameters)
	sch, err := compileSchema(t.Name, t.Parameters)
	if err != nil {
		panic(fmt.Sprintf("dispatcher: Register: tool %q: %v", t.Name, err))
	}
	if err := checkDefaults(t.Name, t.Parameters); err != nil {
		panic(fmt.Sprintf("dispatcher: Register: %v", err))
	}
	props := properties(t.Parameters)
	for _, c := range t.Checks {
		p, ok := props[c.Arg].(map[string]any)
		if !ok || p["type"] != "string" {
			panic(fmt.Sprintf("dispatcher: Register: tool %q: check %s on undeclared or non-string argument %q", t.Name, c.Kind, c.Arg))
		}
	}
	if t.Risk == "" {
		t.Risk = RiskHigh
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[t.Name]; dup {
		panic(fmt.Sprintf("dispatcher: Register: duplicate tool name %q", t.Name))
	}
	r.tools[t.Name] = &registered{Tool: t, schema: sch}
}

// Lookup returns the tool called name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	rt, ok := r.lookup(name)
	if !ok {
		return Tool{}, false
	}
	return rt.Tool, true
}

// lookup returns the registered tool called name.
func (r *Registry) lookup(name string) (*registered, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	rt, ok := r.tools[name]
	return rt, ok
}

// Names returns the tool names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.tools))
	for n := range r.tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Tools returns the tools sorted by name.
func (r *Registry) Tools() []Tool {
	names := r.Names()
	out := make([]Tool, 0, len(names))
	for _, n := range names {
		if t, ok := r.Lookup(n); ok {
			out = append(out, t)
		}
	}
	return out
}

// properties returns the "properties" object of a schema, or nil.
func properties(schema map[string]any) map[string]any {
	p, _ := schema["properties"].(map[string]any)
	return p
}

// required returns the "required" list of a schema.
func required(schema map[string]any) []string {
	switch v := schema["required"].(type) {
	case []string:
		return slices.Clone(v)
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// cloneJSON deep-copies a JSON-like value through encoding/json, so the
// registry never shares maps with its callers. Numbers become float64:
// openai-go marshals json.Number as a string, which would corrupt the
// schemas sent to the model.
func cloneJSON(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("dispatcher: schema is not JSON: %v", err))
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("dispatcher: schema is not a JSON object: %v", err))
	}
	return out
}
