package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: airlock COMMAND [flags]

commands:
  serve     the HTTP API and web UI: airlock serve [--addr 127.0.0.1:8080] [--redis URL] [--insecure-local] [--secrets-file FILE]
  worker    run sandbox jobs from the Redis queue: airlock worker --redis URL [--concurrency N] [--interactive-reserve N] [--secrets-file FILE]
  batch     batches: airlock batch submit|run|status|results|cancel|retry|list (see airlock batch)
  run       run the agent on a goal: airlock run [--model M] [--base-url U] [--mount DIR] [--max-steps N] [--json] "goal"
  mcp       an MCP server on stdio for local hosts: airlock mcp [--mount DIR] [--timeout 30s]
  exec      run one snippet: airlock exec [--json] [--timeout 10s] [--memory 256m] [--cpus 1] [--mount DIR] [--secrets-file FILE] run_python|execute_shell [CODE]
  session   open a session and run several snippets in it (stdin, separated by lines "---")
  images    build or list the sandbox images: airlock images build|list
  env       environments: airlock env build FILE | airlock env list | airlock env rm NAME
  tools     the tool registry: airlock tools list | airlock tools cost [--rounds 20]
  reap      remove leftover sandbox containers
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run dispatches a subcommand and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "exec":
		return runExec(rest, stdin, stdout, stderr)
	case "mcp":
		return runMCP(rest, stdin, stdout, stderr)
	case "session":
		return runSession(rest, stdin, stdout, stderr)
	case "images":
		return runImages(rest, stdout, stderr)
	case "env":
		return runEnv(rest, stdout, stderr)
	case "tools":
		return runTools(rest, stdout, stderr)
	case "serve":
		return runServe(rest, stdout, stderr)
	case "worker":
		return runWorker(rest, stdout, stderr)
	case "run":
		return runAgentCmd(rest, stdin, stdout, stderr)
	case "reap":
		return runReap(rest, stdout, stderr)
	case "batch":
		return runBatch(rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "airlock: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
}
