package mcpserver

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// resultSchema is the output schema of every tool: dispatcher.Result's
// JSON form, inferred from the Go type so it cannot drift from it.
func resultSchema() (map[string]any, error) {
	sch, err := jsonschema.For[dispatcher.Result](nil)
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

// render turns a dispatcher Result into the MCP tool result: the tool
// message as text, the result (artifact bytes left out) as structured
// content, PNG artifacts as images, other artifacts as resource links.
func (s *Server) render(res dispatcher.Result) *mcp.CallToolResult {
	out := &mcp.CallToolResult{IsError: res.Status != dispatcher.StatusOK}
	out.Content = append(out.Content, &mcp.TextContent{Text: res.Content})
	structured := res
	if res.Sandbox != nil {
		sb := *res.Sandbox
		sb.Data = nil
		sb.Artifacts = nil
		for _, a := range res.Sandbox.Artifacts {
			out.Content = append(out.Content, artifactContent(a))
			a.Data = nil
			sb.Artifacts = append(sb.Artifacts, a)
		}
		structured.Sandbox = &sb
	}
	out.StructuredContent = structured
	return out
}

// artifactContent is an artifact as MCP content: a PNG as an image, a file
// under /work/outputs as a link to its resource, anything else embedded.
func artifactContent(a core.Artifact) mcp.Content {
	if a.MIME == "image/png" && len(a.Data) > 0 {
		return &mcp.ImageContent{Data: a.Data, MIMEType: a.MIME}
	}
	size := a.Size
	if strings.HasPrefix(a.Name, "outputs/") {
		return &mcp.ResourceLink{URI: workURI(a.Name), Name: path.Base(a.Name), MIMEType: a.MIME, Size: &size,
			Description: "a file the code wrote under /work/" + a.Name}
	}
	return &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "airlock://artifact/" + a.SHA256 + "/" + path.Base(a.Name), MIMEType: a.MIME, Blob: a.Data}}
}

// errorResult is a tool result with isError and a message for the model.
func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}
}
