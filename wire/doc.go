// Package wire holds every request and response body of Airlock's HTTP API
// as Go types: what api encodes, what client decodes, what the MCP server
// renders and what the run manager and the batch runner produce. It holds
// types only (no behaviour beyond a status predicate) and imports nothing
// of Airlock but core, so any program can use it.
//
// api/openapi.json describes the same bodies; a test checks each of its
// schemas against the type here field by field, so a field added on one
// side only fails the build.
package wire
