package client

// CodeOptions are the optional arguments of run_python and execute_shell.
// Env and Stdin are for that one call only: they are gone after it, in a
// session too.
type CodeOptions struct {
	// Env sets environment variables (names of capital letters, digits
	// and _; AIRLOCK_*, PATH, HOME, PYTHON* and LD_* are refused).
	Env map[string]string
	// Stdin is what the code reads on its standard input.
	Stdin string
	// TimeoutSeconds lowers the timeout, or raises it up to the key's
	// ceiling (past it the server answers 400); 0 means the default: the
	// key's limit for a one-shot call, the session's own in a session.
	TimeoutSeconds int
}

// arguments are the tool arguments for code under arg.
func (o CodeOptions) arguments(arg, code string) map[string]any {
	args := map[string]any{arg: code}
	if len(o.Env) > 0 {
		args["env"] = o.Env
	}
	if o.Stdin != "" {
		args["stdin"] = o.Stdin
	}
	if o.TimeoutSeconds > 0 {
		args["timeout_seconds"] = o.TimeoutSeconds
	}
	return args
}

// PythonCall is a run_python call of code with opts, for CallTool,
// CallSessionTool and their streaming forms.
func PythonCall(code string, opts CodeOptions) ToolCall {
	return ToolCall{Name: "run_python", Arguments: opts.arguments("code", code)}
}

// ShellCall is an execute_shell call of command with opts, for CallTool,
// CallSessionTool and their streaming forms.
func ShellCall(command string, opts CodeOptions) ToolCall {
	return ToolCall{Name: "execute_shell", Arguments: opts.arguments("command", command)}
}
