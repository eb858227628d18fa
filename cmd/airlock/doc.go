// Command airlock runs LLM tool calls in locked-down Docker sandboxes.
//
//	airlock serve [--addr HOST:PORT] [--redis URL] [--insecure-local]
//	airlock worker --redis URL [--concurrency N] [--interactive-reserve N]
//	airlock run [flags] "goal"
//	airlock exec [flags] run_python|execute_shell [CODE]
//	airlock session [flags]            (snippets from stdin, separated by lines of ---)
//	airlock images build|list
//	airlock tools list|cost
//	airlock reap
package main
