package client_test

import (
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/client"
)

// TestCompleteAndVariables: in a real session, Complete offers the
// session's own function by its prefix and, inside its call, its
// signature and docstring; Variables lists an array with its shape and
// size and leaves out modules; neither runs as a call (the next call is
// execution 2).
func TestCompleteAndVariables(t *testing.T) {
	ctx := testCtx(t)
	c := newClient(t, serve(t, nil), keyAlice)
	s, err := c.CreateSession(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.DeleteSession(ctx, s.ID) })
	okCall(t)(c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{
		"code": "import numpy as np\na = np.zeros((3, 4))\ndef area(radius):\n    \"\"\"The area of a circle.\"\"\"\n    return 3.14159 * radius ** 2"}}))

	comp, err := c.Complete(ctx, s.ID, "x = are", 7)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(comp.Matches, "area") || comp.CursorStart != 4 || comp.CursorEnd != 7 || len(comp.Signatures) != 0 {
		t.Errorf("completion %+v, want area replacing 4..7 and no signature", comp)
	}
	comp, err = c.Complete(ctx, s.ID, "area(", 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(comp.Signatures) != 1 || comp.Signatures[0].Label != "area(radius)" || comp.Signatures[0].Doc != "The area of a circle." {
		t.Errorf("signatures %+v, want area(radius) with its docstring", comp.Signatures)
	}

	vars, err := c.Variables(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for i, v := range vars.Variables {
		names[v.Name] = i
	}
	if _, ok := names["np"]; ok {
		t.Errorf("the module np is listed: %+v", vars)
	}
	i, ok := names["a"]
	if !ok {
		t.Fatalf("a is not listed: %+v", vars)
	}
	if a := vars.Variables[i]; a.Type != "ndarray" || a.Module != "numpy" || !slices.Equal(a.Shape, []int{3, 4}) || a.Size == nil || *a.Size != 96 {
		t.Errorf("a = %+v, want an ndarray (3, 4) of 96 bytes", a)
	}
	if f, ok := names["area"]; !ok || vars.Variables[f].Type != "function" {
		t.Errorf("area is not listed as a function: %+v", vars)
	}
	res, err := c.CallSessionTool(ctx, s.ID, client.ToolCall{Name: "run_python", Arguments: map[string]any{"code": "print(area(1))"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Result.ExecutionCount != 2 {
		t.Errorf("the call after the questions: %+v, want execution 2", res.Result)
	}
}
