package dispatcher

import (
	"context"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/internal/policy"
)

// where says how the file tools resolve relative paths.
func (c Config) where() string {
	return "Relative paths start in " + c.WorkDir + " in a session, else in " + c.InputDir + " (the read-only input files)."
}

// pathParameter is the schema of a path argument.
func pathParameter(desc string) map[string]any {
	return map[string]any{"type": "string", "minLength": 1, "maxLength": maxPathChars, "pattern": noNUL, "description": desc}
}

// readFileTool declares read_file.
func readFileTool(cfg Config) Tool {
	return Tool{
		Name:        ToolReadFile,
		Description: "Read a text file from the input files or the session's work folder, by lines. Use it to look at a file before analysing it; for binary or very large files use run_python. " + cfg.where(),
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":   pathParameter("Path of the file to read."),
				"offset": map[string]any{"type": "integer", "minimum": 0, "default": 0, "description": "Number of lines to skip from the start."},
				"limit":  map[string]any{"type": "integer", "minimum": 1, "maximum": 5000, "default": 500, "description": "Maximum number of lines to return."},
			},
			"required":             []string{"path"},
			"additionalProperties": false,
		},
		Risk:   RiskLow,
		Checks: []Check{{Arg: "path", Kind: CheckReadPath}},
		Prepare: func(ctx context.Context, inv Invocation) (Action, error) {
			return cfg.pyAction(inv, policy.ReadFileProgram, map[string]any{
				"path": inv.Args.String("path"), "offset": inv.Args.Int("offset"), "limit": inv.Args.Int("limit"), "max_bytes": readFileMaxByte,
			})
		},
	}
}

// writeFileTool declares write_file.
func writeFileTool(cfg Config) Tool {
	return Tool{
		Name:        ToolWriteFile,
		Description: "Write a text file in the session's work folder " + cfg.WorkDir + ", creating folders as needed. Use it to save results, scripts or data for later steps; files under " + cfg.WorkDir + "/outputs are returned to the user. Needs a session.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":    pathParameter("Path of the file to write, under " + cfg.WorkDir + " (relative paths start there)."),
				"content": map[string]any{"type": "string", "maxLength": maxContentChars, "description": "The text to write (UTF-8)."},
				"mode":    map[string]any{"type": "string", "enum": []string{"overwrite", "append"}, "default": "overwrite", "description": "Replace the file or append to it."},
			},
			"required":             []string{"path", "content"},
			"additionalProperties": false,
		},
		Risk:   RiskMedium,
		Checks: []Check{{Arg: "path", Kind: CheckWritePath}},
		Prepare: func(ctx context.Context, inv Invocation) (Action, error) {
			if inv.Call.SessionID == "" {
				return Action{}, Refuse("session_required", "write_file needs a session: "+cfg.WorkDir+" is writable only inside one")
			}
			return cfg.pyAction(inv, policy.WriteFileProgram, map[string]any{
				"path": inv.Args.String("path"), "content": inv.Args.String("content"), "mode": inv.Args.String("mode"),
			})
		},
	}
}

// listDirectoryTool declares list_directory.
func listDirectoryTool(cfg Config) Tool {
	return Tool{
		Name:        ToolListDirectory,
		Description: "List the files and folders at a path, with sizes. Use it to discover the input files or what earlier steps wrote. " + cfg.where(),
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
		Prepare: func(ctx context.Context, inv Invocation) (Action, error) {
			p := inv.Args.String("path")
			if p == "" {
				p = "."
			}
			return cfg.pyAction(inv, policy.ListDirProgram, map[string]any{
				"path": p, "recursive": inv.Args.Bool("recursive"), "max_entries": inv.Args.Int("max_entries"),
			})
		},
	}
}

// sqliteQueryTool declares sqlite_query.
func sqliteQueryTool(cfg Config) Tool {
	return Tool{
		Name: ToolSQLiteQuery,
		Description: "Run one read-only SQL query (SELECT, WITH, or an introspection PRAGMA such as table_info) on a SQLite database file and get the rows as tab-separated text. " +
			"Use it to explore or aggregate data in .db/.sqlite files; writes are refused by the engine. " + cfg.where(),
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"database": pathParameter("Path of the SQLite database file."),
				"query":    map[string]any{"type": "string", "minLength": 1, "maxLength": maxQueryChars, "description": "Exactly one SQL statement."},
				"max_rows": map[string]any{"type": "integer", "minimum": 1, "maximum": 1000, "default": 100, "description": "Maximum rows to return."},
			},
			"required":             []string{"database", "query"},
			"additionalProperties": false,
		},
		Risk:   RiskLow,
		Checks: []Check{{Arg: "database", Kind: CheckReadPath}, {Arg: "query", Kind: CheckSQL}},
		Prepare: func(ctx context.Context, inv Invocation) (Action, error) {
			return cfg.pyAction(inv, policy.SQLiteProgram, map[string]any{
				"database": inv.Args.String("database"), "query": inv.Args.String("query"), "max_rows": inv.Args.Int("max_rows"),
			})
		},
	}
}

// pyAction builds the python Request of a file or SQL tool. It names no
// timeout: the sandbox's default applies, as for the code tools.
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
		Request:       &core.Request{Op: core.OpExec, Language: core.Python, Code: code, Generated: true},
		SandboxPolicy: true,
	}, nil
}
