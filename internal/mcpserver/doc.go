// Package mcpserver serves Airlock's tools over the Model Context Protocol,
// on github.com/modelcontextprotocol/go-sdk.
//
// The tools, their JSON Schemas and descriptions come from the dispatcher's
// registry, and every tools/call goes through dispatcher.Dispatcher.Run:
// this package only translates. Each MCP session lazily gets its own
// Airlock session on its first tool call, so Python state and /work persist
// across that MCP session's calls; the Airlock session is closed when the
// MCP session ends. The session's /work files are MCP resources.
//
// Results: the compact tool message is text content, the full result is
// structuredContent (with an output schema), PNG artifacts are image
// content, other artifacts are resource links; executions that failed or
// were refused are tool results with isError. Unknown tools are JSON-RPC
// errors (-32602), as the SDK answers before any handler runs; invalid
// arguments are tool results with isError, so the model can correct them.
//
// Calls the policy holds for approval ask the user through elicitation when
// the client supports it, and are refused with a clear message otherwise.
// While a call runs, progress notifications are sent when the client asked
// for them (a progress token); notifications/cancelled interrupts the call
// and keeps the session.
//
// Server.MCPServer builds the *mcp.Server of one owner (stdio: `airlock
// mcp`); Server.Handler returns the owner's streamable HTTP handler (the
// /mcp route of `airlock serve`), so one owner can never reach another's
// MCP session.
package mcpserver
