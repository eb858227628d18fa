package wire

// CompleteRequest is the body of POST /v1/sessions/{id}/complete: code and
// the cursor's offset in it, in Unicode code points (as Jupyter counts).
type CompleteRequest struct {
	Code      string `json:"code"`
	CursorPos int    `json:"cursor_pos"`
}

// Signature is the signature of the callable the cursor is in (or right
// after its opening parenthesis), with its docstring.
type Signature struct {
	Label string `json:"label"`
	Doc   string `json:"doc"`
}

// Completion answers POST /v1/sessions/{id}/complete: the kernel's (Jedi's)
// completions, which replace code[CursorStart:CursorEnd], and the
// signature of the call the cursor is inside, if any.
type Completion struct {
	Matches     []string    `json:"matches"`
	CursorStart int         `json:"cursor_start"`
	CursorEnd   int         `json:"cursor_end"`
	Signatures  []Signature `json:"signatures"`
}

// Variable is one of a session's globals, as a variable panel shows it.
type Variable struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Module is the top-level module of the type ("pandas", "numpy"; ""
	// for builtins).
	Module string `json:"module"`
	// Shape is an array's or frame's shape, a container's length; left
	// out for anything else.
	Shape []int `json:"shape,omitempty"`
	// Size is in bytes: nbytes or memory_usage for arrays and frames,
	// sys.getsizeof otherwise; nil when it could not be measured.
	Size *int64 `json:"size"`
	// Summary is the start of the value's repr ("" for arrays and frames).
	Summary string `json:"summary"`
}

// VariableList answers GET /v1/sessions/{id}/variables: the session's
// globals sorted by name (names starting with _ and modules left out);
// More counts those past the first 500.
type VariableList struct {
	Variables []Variable `json:"variables"`
	More      int        `json:"more"`
}
