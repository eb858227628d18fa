package mcpserver

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// resultSchema is the output schema of every tool: the REST API's
// structured result (wire.ToolResult), inferred from the Go type so it
// cannot drift from it.
func resultSchema() (map[string]any, error) {
	sch, err := jsonschema.For[wire.ToolResult](nil)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: output schema: %w", err)
	}
	b, err := json.Marshal(sch)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: output schema: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("mcpserver: output schema: %w", err)
	}
	return m, nil
}

// render turns an Outcome into the MCP tool result: the tool message as
// text, the structured result (the REST API's, the same for local and
// remote calls) as structured content, PNG artifacts as images, other
// artifacts as resource links or embedded.
func (s *Server) render(o Outcome) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: o.Status != dispatcher.StatusOK, StructuredContent: o.Answer.Result}
	out.Content = append(out.Content, &mcp.TextContent{Text: o.Answer.Message.Content})
	for i, a := range o.Answer.Result.Artifacts {
		var data []byte
		if i < len(o.Files) {
			data = o.Files[i]
		}
		out.Content = append(out.Content, artifactContent(a, data))
	}
	return out
}

// artifactContent is an artifact (its bytes data, when fetched) as MCP
// content: a PNG as an image, a file under /work/outputs as a link to its
// resource, anything else embedded.
func artifactContent(a wire.Artifact, data []byte) mcp.Content {
	if a.MIME == "image/png" && len(data) > 0 {
		return &mcp.ImageContent{Data: data, MIMEType: a.MIME}
	}
	size := a.Size
	if strings.HasPrefix(a.Name, "outputs/") {
		return &mcp.ResourceLink{URI: workURI(a.Name), Name: path.Base(a.Name), MIMEType: a.MIME, Size: &size,
			Description: "a file the code wrote under /work/" + a.Name}
	}
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "airlock://artifact/" + a.SHA256 + "/" + path.Base(a.Name), MIMEType: a.MIME, Blob: data}}
}

// errorResult is a tool result with isError and a message for the model.
func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
