// Package toolcalls is the tool-call service behind the API's front door:
// what a key may ask for (its ceiling, budgets and input folders: Grants),
// a request turned into the dispatcher call, and a dispatcher result
// turned into the answer (wire.ToolCallResponse): what the call did to its
// session, which of its artifacts are kept and where to download them,
// and whether an answer stored under an idempotency key may be replayed
// (never once its artifacts are gone). The API decodes, authenticates,
// maps errors to statuses and streams; the MCP server renders the same
// answers (Answer).
package toolcalls
