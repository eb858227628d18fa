package dispatcher

import (
	"context"
	"encoding/json"
)

// Typed Go API over Run for callers that build calls in code (batch jobs,
// tests, an MCP bridge). Each method marshals its arguments struct and goes
// through Run, so validation, policy, approval, redaction and audit apply
// exactly as for a model's call. Zero optional fields take the schema
// defaults. A test checks that each struct's JSON fields are the tool's
// schema properties.

// RunPythonArgs are run_python's arguments.
type RunPythonArgs struct {
	Code           string            `json:"code"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
	Env            map[string]string `json:"env,omitempty"`   // for this call only
	Stdin          string            `json:"stdin,omitempty"` // for this call only
}

// ExecuteShellArgs are execute_shell's arguments.
type ExecuteShellArgs struct {
	Command        string            `json:"command"`
	TimeoutSeconds int               `json:"timeout_seconds,omitempty"`
	Env            map[string]string `json:"env,omitempty"`   // for this call only
	Stdin          string            `json:"stdin,omitempty"` // for this call only
}

// ReadFileArgs are read_file's arguments.
type ReadFileArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset,omitempty"`
	Limit  int    `json:"limit,omitempty"`
}

// WriteFileArgs are write_file's arguments.
type WriteFileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Mode    string `json:"mode,omitempty"` // "overwrite" (default) or "append"
}

// ListDirectoryArgs are list_directory's arguments.
type ListDirectoryArgs struct {
	Path       string `json:"path,omitempty"`
	Recursive  bool   `json:"recursive,omitempty"`
	MaxEntries int    `json:"max_entries,omitempty"`
}

// SQLiteQueryArgs are sqlite_query's arguments.
type SQLiteQueryArgs struct {
	Database string `json:"database"`
	Query    string `json:"query"`
	MaxRows  int    `json:"max_rows,omitempty"`
}

// Invoke runs tool with args marshalled to JSON; meta supplies the call's
// ID and caller context (its Name and Arguments are replaced).
func (d *Dispatcher) Invoke(ctx context.Context, meta Call, tool string, args any) Result {
	b, err := json.Marshal(args)
	if err != nil {
		meta.Name, meta.Arguments = tool, json.RawMessage(`"`+"unencodable arguments"+`"`)
		return d.Run(ctx, meta)
	}
	meta.Name, meta.Arguments = tool, b
	return d.Run(ctx, meta)
}

// RunPython runs run_python.
func (d *Dispatcher) RunPython(ctx context.Context, meta Call, a RunPythonArgs) Result {
	return d.Invoke(ctx, meta, ToolRunPython, a)
}

// ExecuteShell runs execute_shell.
func (d *Dispatcher) ExecuteShell(ctx context.Context, meta Call, a ExecuteShellArgs) Result {
	return d.Invoke(ctx, meta, ToolExecuteShell, a)
}

// ReadFile runs read_file.
func (d *Dispatcher) ReadFile(ctx context.Context, meta Call, a ReadFileArgs) Result {
	return d.Invoke(ctx, meta, ToolReadFile, a)
}

// WriteFile runs write_file.
func (d *Dispatcher) WriteFile(ctx context.Context, meta Call, a WriteFileArgs) Result {
	return d.Invoke(ctx, meta, ToolWriteFile, a)
}

// ListDirectory runs list_directory.
func (d *Dispatcher) ListDirectory(ctx context.Context, meta Call, a ListDirectoryArgs) Result {
	return d.Invoke(ctx, meta, ToolListDirectory, a)
}

// SQLiteQuery runs sqlite_query.
func (d *Dispatcher) SQLiteQuery(ctx context.Context, meta Call, a SQLiteQueryArgs) Result {
	return d.Invoke(ctx, meta, ToolSQLiteQuery, a)
}
