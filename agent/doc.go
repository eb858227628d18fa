// Package agent is Airlock's model loop: it sends a conversation and the
// dispatcher's tool list to an OpenAI-compatible chat completions server
// (through github.com/openai/openai-go/v3), turns each returned tool call
// into a dispatcher call, appends the results as role "tool" messages in
// the model's order, and goes again until the model answers.
//
// The loop never executes anything itself: every tool call goes through
// [Tools.Run]. It stops on a final answer, a step limit (after one last
// call without tools asking for a conclusion), a repeated identical call,
// a token or wall-clock budget, or cancellation. Provider quirks (missing
// or duplicate call ids, object-form or invalid arguments, streamed calls
// sharing one index) are normalised before the loop sees them, and
// transport errors are retried with exponential backoff and jitter.
//
// [Manager] runs loops in the background for the HTTP API and the CLI:
// each run has an id, an owner, an event stream with dense sequence
// numbers (for SSE resume), and may pause waiting for a human to approve
// a tool call.
//
// Runs live in a state.Store (ManagerConfig.Store): a record per run
// (kind "run": request, status, usage, the holding replica's lease and a
// checkpoint of the conversation, the step and the tool results recorded
// so far), its event log (kind "runevents", so an event's Seq is the
// log's), its approval decisions (kind "rundecisions") and a server-wide
// index of runs not yet final ("runs-active"). Managers sharing a store
// answer for each other's runs; the driving one renews its lease by
// compare and swap, and when a lease runs out another takes the run over
// from its checkpoint. A model call in flight may be repeated; a tool
// call whose result was recorded is not, and a repeated one carries the
// same dispatcher.Call.IdempotencyKey (run/step/index). A follow-up run
// (RunRequest.PreviousRunID) starts from a finished run's conversation.
//
// Package agenttest holds a scripted fake OpenAI-compatible server for
// tests, including end-to-end tests against real sandboxes.
package agent
