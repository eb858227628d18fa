package sandbox

import (
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/core"
)

// TestSessionVariables: the variables introspection lists the session's
// globals by name with type, module, shape and size (a DataFrame's shape
// and memory, a list's length), leaves out modules, private names and the
// kernel's own display, survives a value whose repr raises, and is no
// call (the next call is execution 2).
func TestSessionVariables(t *testing.T) {
	t.Parallel() // functional: containers of its own engine only
	e := newTestEngine(t, nil)
	s := openSession(t, e, "o")
	sexec(t, e, s.ID, "o", core.Python, "import pandas as pd\ndf = pd.DataFrame({'a': range(5)})\nxs = [1, 2, 3]\n_hidden = 1\n"+
		"class Bad:\n    def __repr__(self): raise RuntimeError('no')\nbad = Bad()", core.Limits{})
	m, err := introspect(t, e, s.ID, "", core.IntrospectVariables, 0)
	if err != nil || m["status"] != "ok" {
		t.Fatalf("variables: %v %v", m, err)
	}
	vars := map[string]map[string]any{}
	var names []string
	for _, v := range m["variables"].([]any) {
		e := v.(map[string]any)
		vars[e["name"].(string)] = e
		names = append(names, e["name"].(string))
	}
	if got := strings.Join(names, " "); got != "Bad bad df xs" {
		t.Errorf("names %q, want Bad bad df xs (no modules, private names or display)", got)
	}
	df := vars["df"]
	if df["type"] != "DataFrame" || df["module"] != "pandas" || df["summary"] != "" {
		t.Errorf("df: %v", df)
	}
	if sh, _ := df["shape"].([]any); len(sh) != 2 || sh[0] != float64(5) || sh[1] != float64(1) {
		t.Errorf("df shape %v, want [5 1]", df["shape"])
	}
	if size, _ := df["size"].(float64); size < 40 {
		t.Errorf("df size %v, want its memory (at least 5 int64)", df["size"])
	}
	if xs := vars["xs"]; xs["type"] != "list" || xs["summary"] != "[1, 2, 3]" || xs["shape"].([]any)[0] != float64(3) {
		t.Errorf("xs: %v", xs)
	}
	if bad := vars["bad"]; bad["type"] != "Bad" || !strings.Contains(bad["summary"].(string), "repr failed") {
		t.Errorf("bad: %v", bad)
	}
	if r := sexec(t, e, s.ID, "o", core.Python, "print(len(xs))", core.Limits{}); r.Stdout != "3\n" || r.ExecutionCount != 2 {
		t.Errorf("the call after the question: %s (execution %d, want 2)", brief(r), r.ExecutionCount)
	}
}
