// Package dispatcher is the one gate every tool call goes through: the tool
// registry, argument validation, policy, approval, redaction, truncation
// and audit. Every caller (HTTP API, agent loop, batch jobs, MCP) uses
// Dispatcher.Run; there is no second dispatch path. The dispatcher never
// talks to Docker: it hands core.Requests to an Executor (the queue
// client in production, a fake in tests).
//
// # Registry
//
// Each tool is declared once as a Tool (name, when-to-use description, JSON
// Schema parameters with types, ranges, enums and defaults, risk, policy
// checks, and Prepare, which turns the validated arguments into a sandbox
// request). The OpenAI tools list (Registry.OpenAITools, openai-go
// v3 types; Registry.OpenAIToolsJSON for plain JSON), the HTTP form
// (Registry.Specs), the system-prompt text (Registry.SystemPrompt) and the
// schema cost (Registry.SchemaCost) are all generated from it. Register
// panics on an empty, malformed or duplicate name, a schema that does not
// compile, or a default its own schema refuses. The built-in tools are
// run_python, execute_shell, read_file, write_file, list_directory and
// sqlite_query (BuiltinTools); typed wrappers (RunPython, ReadFile, ...)
// go through Run too.
//
// run_python and execute_shell take, besides their code, timeout_seconds,
// env (variables for this call only; names of capital letters, digits and
// _, with AIRLOCK_*, PATH, HOME, PYTHON* and LD_* refused naming the
// variable; sizes capped by core.CheckEnv) and stdin; env and stdin travel
// as core.Request.Env and Stdin and are gone after the call, in a session
// too.
//
// File and SQL tools act inside the sandbox: their Prepare functions generate a
// small Python program that receives its inputs as base64-encoded JSON
// (never spliced into the source), resolves the path with realpath, and
// re-checks confinement and the secret-file patterns on the resolved path,
// so a symlink cannot lead out. sqlite_query opens the database with
// mode=ro, sets PRAGMA query_only and installs an authorizer that denies
// everything but reads, functions and introspection pragmas (so ATTACH,
// writes and pragma assignments fail in the engine), and relies on
// cursor.execute refusing several statements; a Go pre-check gives the
// clearer "sql.multiple_statements" refusal first.
//
// # Run
//
// Run(ctx, call): unknown tool → rejected "unknown_tool" listing valid
// names; arguments (a JSON object, or a JSON string holding one; empty
// means {}) that do not parse → rejected "invalid_json" quoting the parse
// error; schema violations → rejected "invalid_arguments" with every
// violation in Result.Fields keyed by JSON pointer; then defaults, policy,
// approval, Prepare (errors → StatusError "handler_error", a *Refusal →
// rejected with its reason, panics → StatusInternal "panic"), the ceiling
// check, the Executor, and rendering. Content is redacted then truncated (head and
// tail around a marker) to Config.MaxContentChars characters and
// Config.MaxContentBytes bytes; the Sandbox result is redacted too
// (stdout, stderr, message, warnings, data, text artifacts).
//
// # Platform errors
//
// An Executor error is a platform failure. Run sets Result.Code to the
// core.Code in the error's chain (core.CodeOf), Result.Err to the error,
// and the Status to the code's name (one vocabulary: platformStatus), and
// never returns a Go error:
//
//   - session_lost → session_lost; not_found → session_not_found; busy,
//     quota, rate_limited → busy; unavailable, deadline, canceled →
//     unavailable;
//   - anything else → internal.
//
// # Timeouts and the ceiling
//
// A call's limits have one bound: its ceiling, Config.Ceiling (the server
// defaults) with Call.Ceiling (the key's policy) over it. The tool argument
// timeout_seconds may lower the timeout or raise it up to the ceiling,
// never past it: over it the call is rejected (Reason "over_ceiling",
// Result.Code core.ErrInvalid, which the API answers with 400) naming the
// ceiling. The schema's maximum (Config.MaxTimeout, the sandbox maximum)
// refuses absurd values. Without timeout_seconds the dispatcher names no
// timeout and the sandbox applies its own: the server default for a
// one-shot call, the session's own limit for a session call. Call.Limits
// from the transport only lower what runs.
//
// # Secrets
//
// Config.Secrets are redacted from everyone's results; Config.KeySecrets
// gives the secrets of one owner's key, redacted from that owner's results
// only, so no other tenant can probe them by printing a guess. Redaction
// compares output with the configured values: it hides what code prints
// verbatim, not an encoded, split or computed form of it, and whoever may
// print a guess learns from a [REDACTED] that the guess was right.
//
// # Policy
//
// Defence in depth on top of the container, on by default, each rule named
// (see internal/policy.Rules) and reported as Reason "policy:<rule>". PolicyConfig
// switches the shell, python and path-secret families off, single rules off
// (Disabled), or turns single rules into approval requests
// (RequireApproval).
//
// Shell commands are lexed (quotes removed, $'..' decoded, $IFS read as a
// blank, {a,b} braces expanded, $(..) `..` <(..) and here-documents
// extracted and checked recursively, wrappers such as env, sudo, timeout,
// xargs, command and sh -c / bash -c / eval / su -c unwrapped). Caught:
// rm -r/-f of /, top-level folders, home or ..-climbing paths (quote-split names like "r"m,
// /bin/rm -r -f, $(echo rm), {rm,-rf,/}, rm${IFS}-rf${IFS}/ included);
// find / -delete; mkfs; dd of=/dev/… and redirections/tee to devices;
// sudo/su/doas/pkexec; world-writable chmod; curl/wget into a shell or
// interpreter (pipe, $(..), <(..), here-string); base64/xxd/openssl
// decoding into one; fork-bomb function shapes; reverse-shell shapes
// (/dev/tcp, nc -e, socat exec:, interactive shell with redirected
// descriptors or a network tool, mkfifo+nc); command names computed at run
// time ($CMD, $(...) other than a literal echo). Not caught: commands
// written to a file and run later (echo ... > x.sh; sh x.sh), aliases and
// functions defined earlier, variables assigned in one command and used as
// rm targets with a literal suffix ("$D/x"), interpreters other than
// python given code (perl -e, node -e), and anything that only the shell's
// run-time state reveals.
//
// Python is tokenized (strings decoded, adjacent literals and '+' joined,
// f-string fields analysed as code) and scanned: imports, from-imports,
// aliases (import os as o; x = os; m = __import__('os')), __import__ and
// importlib.import_module with literal or computed names, sys.modules[...],
// getattr on os/builtins with literal (getattr(os, 'sys'+'tem')) or
// computed names, vars(os), os.__dict__, __subclasses__/__globals__/
// __builtins__, and exec/eval/compile (literals are analysed recursively,
// computed text is refused). Not caught: names built by anything but
// literal concatenation and passed through non-os objects (e.g. a module
// reached via a function's return value), aliases made in an earlier call
// of the same session, pickle/marshal payloads, and code that writes a
// script file and runs it with another tool. The container remains the
// boundary.
//
// Paths are cleaned lexically (".." resolved) against the work folder (in
// a session) or the input folder; credential and key files are refused for
// read and write; reads stay under the work and input folders, writes
// under the work folder; symlinks are resolved inside the sandbox.
//
// # Approval
//
// Tools in Config.ApprovalTools and rules in PolicyConfig.RequireApproval
// return StatusPendingApproval with an ApprovalToken. Approve runs the held
// call exactly once (re-validated, policy re-checked except the approved
// rules); Reject resolves it without running. A token resolves once: a
// second use, an unknown or an expired token gives ErrApprovalNotFound.
// Storage is Config.Approvals, an internal/approvals Store: in memory by
// default, in Redis (a PX expiry and an atomic take script) under serve
// --redis.
//
// # Audit
//
// Every Run, Approve and Reject leaves one slog record "tool_call" with
// caller, owner, tool, call id, session id, the sha256 of the raw
// arguments and their size, decision, status, reason, exit code and
// duration. Argument values never appear; identifiers are capped and
// redacted.
package dispatcher
