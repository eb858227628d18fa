// Command airlock runs LLM tool calls in locked-down Docker sandboxes.
//
//	airlock serve [--addr HOST:PORT] [--redis URL] [--insecure-local] [--secrets-file FILE]
//	airlock worker --redis URL [--concurrency N] [--interactive-reserve N] [--secrets-file FILE]
//	airlock run [flags] "goal"
//	airlock exec [flags] run_python|execute_shell [CODE]
//	airlock session [flags]            (snippets from stdin, separated by lines of ---)
//	airlock images build|list
//	airlock tools list|cost
//	airlock reap
//
// Each flag is declared once (sandboxflags.go, stackflags.go, the model
// flags in run.go) and each component is assembled in one place: the
// stack (stack.go: queue, worker, jobs client, dispatcher, approval
// stores) and its run manager. --secrets-file (env AIRLOCK_SECRETS_FILE)
// names a file of secret values, one per line, redacted from every
// result; a worker redacts them before its results reach the queue.
package main
