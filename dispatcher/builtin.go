package dispatcher

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/core"
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
	maxStdinChars   = 200_000
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
// list_directory and sqlite_query for cfg, and fetch_url when cfg has a
// Fetcher.
func BuiltinTools(cfg Config) []Tool {
	cfg = cfg.withDefaults()
	tools := []Tool{
		runPythonTool(cfg), executeShellTool(cfg),
		readFileTool(cfg), writeFileTool(cfg), listDirectoryTool(cfg), sqliteQueryTool(cfg),
	}
	if cfg.Fetcher != nil {
		tools = append(tools, fetchURLTool(cfg))
	}
	return tools
}

// runPythonTool declares run_python.
func runPythonTool(cfg Config) Tool {
	return Tool{
		Name: ToolRunPython,
		Description: "Run Python 3 code in the sandbox and get its stdout, stderr and figures. Use it for calculations, " +
			"data analysis (pandas, numpy, scipy, scikit-learn, matplotlib are installed) and for reading the input files under " +
			cfg.InputDir + ". In a session, variables persist between calls and " + cfg.WorkDir + " is writable; save files to " +
			cfg.WorkDir + "/outputs to return them. The value of a last bare expression is printed. No network.",
		Parameters: execParameters(cfg, "code", map[string]any{"type": "string", "minLength": 1, "maxLength": maxCodeChars, "description": "Python 3 source to run."}),
		Risk:       RiskHigh,
		Checks:     []Check{{Arg: "code", Kind: CheckPython}},
		Prepare:    execPrepare(core.Python, "code"),
	}
}

// executeShellTool declares execute_shell.
func executeShellTool(cfg Config) Tool {
	return Tool{
		Name: ToolExecuteShell,
		Description: "Run a bash command in the sandbox and get its stdout, stderr and exit code. Use it for quick file inspection " +
			"and text processing (coreutils, grep, sed, awk, jq, sqlite3, git, ripgrep, file are installed) when that is simpler " +
			"than Python. It runs as an unprivileged user with no network; prefer run_python for data analysis.",
		Parameters: execParameters(cfg, "command", map[string]any{"type": "string", "minLength": 1, "maxLength": maxCommandChars, "description": "The bash command line to run."}),
		Risk:       RiskHigh,
		Checks:     []Check{{Arg: "command", Kind: CheckShell}},
		Prepare:    execPrepare(core.Shell, "command"),
	}
}

// execParameters is the schema of a code tool: its code argument plus
// timeout_seconds, env and stdin.
func execParameters(cfg Config, arg string, code map[string]any) map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			arg:               code,
			"timeout_seconds": timeoutParameter(cfg),
			"env": map[string]any{
				"type":                 "object",
				"maxProperties":        core.MaxEnvVars,
				"additionalProperties": map[string]any{"type": "string", "maxLength": core.MaxEnvValueBytes},
				"description": "Environment variables for this call only (names of capital letters, digits and _; " +
					"AIRLOCK_*, PATH, HOME, PYTHON* and LD_* are refused). They are gone after the call, also in a session.",
			},
			"stdin": map[string]any{"type": "string", "maxLength": maxStdinChars,
				"description": "Text the program reads on its standard input, for this call only (absent: empty input)."},
		},
		"required":             []string{arg},
		"additionalProperties": false,
	}
}

// timeoutParameter is the schema of timeout_seconds: at most the schema
// maximum; the caller's ceiling is checked when the call runs. The text is
// the same for every configuration, so every door shows one schema.
func timeoutParameter(cfg Config) map[string]any {
	return map[string]any{
		"type":    "integer",
		"minimum": 1,
		"maximum": int(cfg.MaxTimeout / time.Second),
		"description": "Wall-clock limit in seconds from the code's start; the run is killed after it. Time the code waits for a CPU on a busy machine moves it, by at most twice the limit. At most the key's limit (the server default " +
			"unless the operator grants more) for a one-shot call, and the session's own limit in a session. Leave it out " +
			"for that limit.",
	}
}

// execPrepare returns the Prepare of run_python / execute_shell.
func execPrepare(lang core.Language, arg string) PrepareFunc {
	return func(_ context.Context, inv Invocation) (Action, error) {
		env, err := envArgument(inv)
		if err != nil {
			return Action{}, err
		}
		req := &core.Request{Op: core.OpExec, Language: lang, Code: inv.Args.String(arg), Env: env, Stdin: inv.Args.String("stdin")}
		if s := inv.Args.Int("timeout_seconds"); s > 0 {
			req.Limits.Timeout = time.Duration(s) * time.Second
		}
		return Action{Request: req}, nil
	}
}

// envArgument returns the env argument as a map, refusing what
// core.CheckEnv refuses (reserved names, sizes) with the variable named.
func envArgument(inv Invocation) (map[string]string, error) {
	raw, _ := inv.Args["env"].(map[string]any)
	if len(raw) == 0 {
		return nil, nil
	}
	env := make(map[string]string, len(raw))
	for k, v := range raw {
		env[k], _ = v.(string) // the schema allows strings only
	}
	if err := core.CheckEnv(env); err != nil {
		msg := err.Error()
		var ce *core.Error
		if errors.As(err, &ce) {
			msg = ce.Message()
		}
		return nil, Refuse("invalid_arguments", "invalid arguments for "+inv.Call.Name+"; fix these and call again:\n- /env: "+msg)
	}
	return env, nil
}
