package dispatcher

import (
	"context"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/policy"
)

// Built-in tool names.
const (
	ToolRunPython     = "run_python"
	ToolExecuteShell  = "execute_shell"
	ToolReadFile      = "read_file"
	ToolWriteFile     = "write_file"
	ToolListDirectory = "list_directory"
	ToolSQLiteQuery   = "sqlite_query"
)

// Size limits of the built-in tools' arguments.
const (
	maxCodeChars    = 100_000
	maxCommandChars = 20_000
	maxPathChars    = 4096
	maxContentChars = 200_000
	maxQueryChars   = 20_000
	readFileMaxByte = 1 << 20
)

// noNUL is a JSON Schema pattern refusing NUL characters in paths.
const noNUL = "^[^\\x00]*$"

// BuiltinRegistry returns a Registry holding the built-in tools for cfg,
// minus cfg.DisabledTools.
func BuiltinRegistry(cfg Config) *Registry {
	cfg = cfg.withDefaults()
	r := NewRegistry()
	for _, t := range BuiltinTools(cfg) {
		if slices.Contains(cfg.DisabledTools, t.Name) {
			continue
		}
		if slices.Contains(cfg.ApprovalTools, t.Name) {
			t.NeedsApproval = true
		}
		r.Register(t)
	}
	return r
}

// BuiltinTools declares run_python, execute_shell, read_file, write_file,
// list_directory and sqlite_query for cfg.
func BuiltinTools(cfg Config) []Tool {
	cfg = cfg.withDefaults()
	timeout := map[string]any{
		"type":        "integer",
		"minimum":     1,
		"maximum":     int(cfg.MaxTimeout / time.Second),
		"default":     int(cfg.DefaultTimeout / time.Second),
		"description": "Wall-clock limit in seconds; the run is killed after it.",
	}
	pathProp := func(desc string) map[string]any {
		return map[string]any{"type": "string", "minLength": 1, "maxLength": maxPathChars, "pattern": noNUL, "description": desc}
	}
	where := "Relative paths start in " + cfg.WorkDir + " in a session, else in " + cfg.InputDir + " (the read-only input files)."
	return []Tool{
		{
			Name: ToolRunPython,
			Description: "Run Python 3 code in the sandbox and get its stdout, stderr and figures. Use it for calculations, " +
				"data analysis (pandas, numpy, scipy, scikit-learn, matplotlib are installed) and for reading the input files under " +
				cfg.InputDir + ". In a session, variables persist between calls and " + cfg.WorkDir + " is writable; save files to " +
				cfg.WorkDir + "/outputs to return them. The value of a last bare expression is printed. No network.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"code":            map[string]any{"type": "string", "minLength": 1, "maxLength": maxCodeChars, "description": "Python 3 source to run."},
					"timeout_seconds": timeout,
				},
				"required":             []string{"code"},
				"additionalProperties": false,
			},
			Risk:    RiskHigh,
			Checks:  []Check{{Arg: "code", Kind: CheckPython}},
			Handler: HandlerFunc(execHandler(core.Python, "code")),
		},
		{
			Name: ToolExecuteShell,
			Description: "Run a bash command in the sandbox and get its stdout, stderr and exit code. Use it for quick file inspection " +
				"and text processing (coreutils, grep, sed, awk, jq, sqlite3, git, ripgrep, file are installed) when that is simpler " +
				"than Python. It runs as an unprivileged user with no network; prefer run_python for data analysis.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"command":         map[string]any{"type": "string", "minLength": 1, "maxLength": maxCommandChars, "description": "The bash command line to run."},
					"timeout_seconds": timeout,
				},
				"required":             []string{"command"},
				"additionalProperties": false,
			},
			Risk:    RiskHigh,
			Checks:  []Check{{Arg: "command", Kind: CheckShell}},
			Handler: HandlerFunc(execHandler(core.Shell, "command")),
		},
		{
			Name:        ToolReadFile,
			Description: "Read a text file from the input files or the session's work folder, by lines. Use it to look at a file before analysing it; for binary or very large files use run_python. " + where,
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"path":   pathProp("Path of the file to read."),
					"offset": map[string]any{"type": "integer", "minimum": 0, "default": 0, "description": "Number of lines to skip from the start."},
					"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": 5000, "default": 500, "description": "Maximum number of lines to return."},
				},
				"required":             []string{"path"},
				"additionalProperties": false,
			},
			Risk:   RiskLow,
			Checks: []Check{{Arg: "path", Kind: CheckReadPath}},
			Handler: HandlerFunc(func(ctx context.Context, inv Invocation) (Action, error) {
				return cfg.pyAction(inv, policy.ReadFileProgram, map[string]any{
					"path": inv.Args.String("path"), "offset": inv.Args.Int("offset"), "limit": inv.Args.Int("limit"), "max_bytes": readFileMaxByte,
				})
			}),
		},
		{
			Name:        ToolWriteFile,
			Description: "Write a text file in the session's work folder " + cfg.WorkDir + ", creating folders as needed. Use it to save results, scripts or data for later steps; files under " + cfg.WorkDir + "/outputs are returned to the user. Needs a session.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"path":    pathProp("Path of the file to write, under " + cfg.WorkDir + " (relative paths start there)."),
					"content": map[string]any{"type": "string", "maxLength": maxContentChars, "description": "The text to write (UTF-8)."},
					"mode":    map[string]any{"type": "string", "enum": []string{"overwrite", "append"}, "default": "overwrite", "description": "Replace the file or append to it."},
				},
				"required":             []string{"path", "content"},
				"additionalProperties": false,
			},
			Risk:   RiskMedium,
			Checks: []Check{{Arg: "path", Kind: CheckWritePath}},
			Handler: HandlerFunc(func(ctx context.Context, inv Invocation) (Action, error) {
				if inv.Call.SessionID == "" {
					return Action{}, Refuse("session_required", "write_file needs a session: "+cfg.WorkDir+" is writable only inside one")
				}
				return cfg.pyAction(inv, policy.WriteFileProgram, map[string]any{
					"path": inv.Args.String("path"), "content": inv.Args.String("content"), "mode": inv.Args.String("mode"),
				})
			}),
		},
		{
			Name:        ToolListDirectory,
			Description: "List the files and folders at a path, with sizes. Use it to discover the input files or what earlier steps wrote. " + where,
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"path":        map[string]any{"type": "string", "maxLength": maxPathChars, "pattern": noNUL, "default": ".", "description": "Folder to list."},
					"recursive":   map[string]any{"type": "boolean", "default": false, "description": "Also list subfolders."},
					"max_entries": map[string]any{"type": "integer", "minimum": 1, "maximum": 5000, "default": 200, "description": "Stop after this many entries."},
				},
				"additionalProperties": false,
			},
			Risk:   RiskLow,
			Checks: []Check{{Arg: "path", Kind: CheckReadPath}},
			Handler: HandlerFunc(func(ctx context.Context, inv Invocation) (Action, error) {
				p := inv.Args.String("path")
				if p == "" {
					p = "."
				}
				return cfg.pyAction(inv, policy.ListDirProgram, map[string]any{
					"path": p, "recursive": inv.Args.Bool("recursive"), "max_entries": inv.Args.Int("max_entries"),
				})
			}),
		},
		{
			Name: ToolSQLiteQuery,
			Description: "Run one read-only SQL query (SELECT, WITH, or an introspection PRAGMA such as table_info) on a SQLite database file and get the rows as tab-separated text. " +
				"Use it to explore or aggregate data in .db/.sqlite files; writes are refused by the engine. " + where,
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"database": pathProp("Path of the SQLite database file."),
					"query":    map[string]any{"type": "string", "minLength": 1, "maxLength": maxQueryChars, "description": "Exactly one SQL statement."},
					"max_rows": map[string]any{"type": "integer", "minimum": 1, "maximum": 1000, "default": 100, "description": "Maximum rows to return."},
				},
				"required":             []string{"database", "query"},
				"additionalProperties": false,
			},
			Risk:   RiskLow,
			Checks: []Check{{Arg: "database", Kind: CheckReadPath}, {Arg: "query", Kind: CheckSQL}},
			Handler: HandlerFunc(func(ctx context.Context, inv Invocation) (Action, error) {
				return cfg.pyAction(inv, policy.SQLiteProgram, map[string]any{
					"database": inv.Args.String("database"), "query": inv.Args.String("query"), "max_rows": inv.Args.Int("max_rows"),
				})
			}),
		},
	}
}

// execHandler returns the handler of run_python / execute_shell.
func execHandler(lang core.Language, arg string) func(context.Context, Invocation) (Action, error) {
	return func(_ context.Context, inv Invocation) (Action, error) {
		req := &core.Request{Op: core.OpExec, Language: lang, Code: inv.Args.String(arg)}
		if s := inv.Args.Int("timeout_seconds"); s > 0 {
			req.Limits.Timeout = time.Duration(s) * time.Second
		}
		return Action{Request: req}, nil
	}
}

// pyAction builds the python Request of a file or SQL tool.
func (c Config) pyAction(inv Invocation, body policy.Program, params map[string]any) (Action, error) {
	base := c.InputDir
	if inv.Call.SessionID != "" {
		base = c.WorkDir
	}
	code, err := c.analysis().GenPython(body, params, base)
	if err != nil {
		return Action{}, err
	}
	return Action{
		Request:       &core.Request{Op: core.OpExec, Language: core.Python, Code: code, Generated: true, Limits: core.Limits{Timeout: c.DefaultTimeout}},
		SandboxPolicy: true,
	}, nil
}
