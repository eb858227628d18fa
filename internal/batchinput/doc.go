// Package batchinput turns a batch request into the batch to run: JSONL
// items (tool calls, each checked as POST /v1/tool-calls checks one, or
// agent runs), or a map spec: one copy of a tool call template per folder
// a glob matches under an operator's input folder (links resolved, never
// leaving the folder), or per uploaded archive (checked entry by entry,
// never unpacked on the host). The API reads the request and maps the
// refusals to statuses; what the batch holds is decided here.
package batchinput
