// Package agenttest is a scripted, OpenAI-compatible chat completions
// server for testing the agent loop: each request is answered by the next
// Turn of a script, streamed (SSE) or not, as the client asked. Turns are
// functions of the request, so a script can answer with what a real tool
// returned (end-to-end tests against real sandboxes).
package agenttest
