package dispatcher

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// mustPanic runs f and fails unless it panics with a message containing want.
func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		if s, _ := r.(string); !strings.Contains(s, want) {
			t.Fatalf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

func TestRegisterPanics(t *testing.T) {
	h := PrepareFunc(func(context.Context, Invocation) (Action, error) { return Action{}, nil })
	obj := map[string]any{"type": "object"}
	r := NewRegistry()
	r.Register(Tool{Name: "a", Description: "d", Parameters: obj, Prepare: h})
	mustPanic(t, "duplicate", func() { r.Register(Tool{Name: "a", Description: "d", Parameters: obj, Prepare: h}) })
	mustPanic(t, "empty tool name", func() { r.Register(Tool{Description: "d", Prepare: h}) })
	mustPanic(t, "must match", func() { r.Register(Tool{Name: "has space", Description: "d", Prepare: h}) })
	mustPanic(t, "no Prepare", func() { r.Register(Tool{Name: "b", Description: "d"}) })
	mustPanic(t, "no description", func() { r.Register(Tool{Name: "b", Prepare: h}) })
	mustPanic(t, "compile", func() {
		r.Register(Tool{Name: "b", Description: "d", Prepare: h, Parameters: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "strang"}}}})
	})
	mustPanic(t, "default", func() {
		r.Register(Tool{Name: "b", Description: "d", Prepare: h, Parameters: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "integer", "maximum": 5, "default": 9}}}})
	})
	mustPanic(t, "check", func() {
		r.Register(Tool{Name: "b", Description: "d", Prepare: h, Parameters: obj, Checks: []Check{{Arg: "nope", Kind: CheckShell}}})
	})
	mustPanic(t, "object", func() {
		r.Register(Tool{Name: "b", Description: "d", Prepare: h, Parameters: map[string]any{"type": "string"}})
	})
	if got := r.Names(); !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("failed registrations left tools behind: %v", got)
	}
}

func TestBuiltinRegistry(t *testing.T) {
	reg := BuiltinRegistry(testConfig())
	want := []string{"execute_shell", "list_directory", "read_file", "run_python", "sqlite_query", "write_file"}
	if got := reg.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("names %v", got)
	}
	cfg := testConfig()
	cfg.DisabledTools = []string{ToolExecuteShell}
	cfg.ApprovalTools = []string{ToolWriteFile}
	reg = BuiltinRegistry(cfg)
	if _, ok := reg.Lookup(ToolExecuteShell); ok {
		t.Error("disabled tool registered")
	}
	if w, _ := reg.Lookup(ToolWriteFile); !w.NeedsApproval {
		t.Error("approval tool not marked")
	}
	// the schema maximum follows the configuration
	cfg = testConfig()
	cfg.MaxTimeout = 60e9
	p, _ := BuiltinRegistry(cfg).Lookup(ToolRunPython)
	if m := properties(p.Parameters)["timeout_seconds"].(map[string]any)["maximum"]; m != float64(60) {
		t.Errorf("maximum %v", m)
	}
}

// TestOpenAIToolsAreValidSchemas compiles every generated parameters
// schema, checks its shape, and checks that Run enforces what it says.
func TestOpenAIToolsAreValidSchemas(t *testing.T) {
	ex := okExecutor()
	d, _ := newTestDispatcher(t, testConfig(), ex)
	tools := d.Registry().OpenAITools()
	if len(tools) != 6 {
		t.Fatalf("%d tools", len(tools))
	}
	wire, err := json.Marshal(tools)
	if err != nil {
		t.Fatal(err)
	}
	var decoded []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			Parameters  map[string]any `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(wire, &decoded); err != nil {
		t.Fatal(err)
	}
	plain, _ := json.Marshal(d.Registry().OpenAIToolsJSON())
	var a, b any
	_ = json.Unmarshal(wire, &a)
	_ = json.Unmarshal(plain, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("openai-go and plain JSON forms differ:\n%s\n%s", wire, plain)
	}
	for _, tool := range decoded {
		fn := tool.Function
		if tool.Type != "function" || fn.Name == "" || fn.Description == "" {
			t.Errorf("bad tool %+v", tool)
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("mem://"+fn.Name, fn.Parameters); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Compile("mem://" + fn.Name); err != nil {
			t.Errorf("%s: generated schema does not compile: %v", fn.Name, err)
		}
		props, _ := fn.Parameters["properties"].(map[string]any)
		for name, p := range props {
			if d, _ := p.(map[string]any)["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", fn.Name, name)
			}
		}
		if fn.Parameters["additionalProperties"] != false {
			t.Errorf("%s allows additional properties", fn.Name)
		}
		// Each required parameter from the generated list is enforced by Run.
		req, _ := fn.Parameters["required"].([]any)
		for _, missing := range req {
			args := map[string]any{}
			for _, other := range req {
				if other != missing {
					args[other.(string)] = "x"
				}
			}
			r := d.Run(context.Background(), call(fn.Name, args))
			key := "/" + missing.(string)
			if r.Status != StatusRejected || r.Reason != "invalid_arguments" || r.Fields[key] == "" {
				t.Errorf("%s without %s: got %s %q %v", fn.Name, missing, r.Status, r.Reason, r.Fields)
			}
		}
		// Every declared maximum and enum is enforced too.
		for name, p := range props {
			pm := p.(map[string]any)
			var bad any
			switch {
			case pm["maximum"] != nil:
				mx, _ := pm["maximum"].(float64)
				bad = mx + 1
			case pm["enum"] != nil:
				bad = "not-in-enum"
			default:
				continue
			}
			args := map[string]any{name: bad}
			for _, rq := range req {
				args[rq.(string)] = "x"
			}
			// timeout_seconds past the maximum is refused as over the
			// ceiling (which is never above it), naming the ceiling.
			r := d.Run(context.Background(), call(fn.Name, args))
			if r.Fields["/"+name] == "" && !(name == "timeout_seconds" && r.Reason == "over_ceiling") {
				t.Errorf("%s.%s=%v accepted: %s %q", fn.Name, name, bad, r.Status, r.Reason)
			}
		}
	}
	if ex.calls() != 0 {
		t.Errorf("invalid calls reached the executor")
	}
}

func TestSystemPromptIsGenerated(t *testing.T) {
	reg := BuiltinRegistry(testConfig())
	p := reg.SystemPrompt()
	for _, tool := range reg.Tools() {
		if !strings.Contains(p, "## "+tool.Name+" (risk: "+string(tool.Risk)) || !strings.Contains(p, tool.Description) {
			t.Errorf("prompt lacks %s", tool.Name)
		}
		for name := range properties(tool.Parameters) {
			if !strings.Contains(p, "- "+name+" (") {
				t.Errorf("prompt lacks %s.%s", tool.Name, name)
			}
		}
	}
	if !strings.Contains(p, "default 500") || !strings.Contains(p, `one of ["overwrite","append"]`) {
		t.Errorf("prompt lacks defaults/enums")
	}
}

func TestSchemaCost(t *testing.T) {
	reg := BuiltinRegistry(testConfig())
	c := reg.SchemaCost()
	if len(c.Tools) != 6 || c.ToolsChars == 0 || c.PromptTokens == 0 || !strings.Contains(c.Method, "4 characters") {
		t.Fatalf("cost %+v", c)
	}
	whole, _ := json.Marshal(reg.OpenAIToolsJSON())
	if c.ToolsChars != len(whole) || c.ToolsTokens != (len(whole)+3)/4 {
		t.Errorf("tools %d chars %d tokens, want %d", c.ToolsChars, c.ToolsTokens, len(whole))
	}
	sum := 0
	for _, tc := range c.Tools {
		sum += tc.Chars
	}
	if sum > c.ToolsChars || sum < c.ToolsChars-10 {
		t.Errorf("per-tool sum %d vs total %d", sum, c.ToolsChars)
	}
	if EstimateTokens("abcde") != 2 || EstimateTokens("") != 0 || EstimateTokens("ééé") != 1 {
		t.Error("EstimateTokens")
	}
}

// TestTypedAPIMatchesSchemas checks each typed argument struct against its tool.
func TestTypedAPIMatchesSchemas(t *testing.T) {
	reg := BuiltinRegistry(testConfig())
	types := map[string]any{
		ToolRunPython: RunPythonArgs{}, ToolExecuteShell: ExecuteShellArgs{}, ToolReadFile: ReadFileArgs{},
		ToolWriteFile: WriteFileArgs{}, ToolListDirectory: ListDirectoryArgs{}, ToolSQLiteQuery: SQLiteQueryArgs{},
	}
	for name, v := range types {
		tool, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		var fields []string
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			fields = append(fields, strings.Split(rt.Field(i).Tag.Get("json"), ",")[0])
		}
		sort.Strings(fields)
		if want := sortedKeys(properties(tool.Parameters)); !reflect.DeepEqual(fields, want) {
			t.Errorf("%s: struct fields %v, schema %v", name, fields, want)
		}
	}
	ex := okExecutor()
	d, _ := newTestDispatcher(t, testConfig(), ex)
	r := d.ExecuteShell(context.Background(), Call{ID: "c9", Owner: "bob"}, ExecuteShellArgs{Command: "ls"})
	if r.Status != StatusOK || r.CallID != "c9" || ex.last(t).Code != "ls" || ex.last(t).Owner != "bob" {
		t.Errorf("typed call: %+v", r)
	}
	if r := d.RunPython(context.Background(), Call{}, RunPythonArgs{Code: "import pty"}); r.Reason != "policy:"+policy.RulePyPty {
		t.Errorf("typed calls must go through policy: %+v", r)
	}
}
