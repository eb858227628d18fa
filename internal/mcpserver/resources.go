package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// Session files are resources named airlock://work/PATH, PATH relative to
// the session's /work folder.
const (
	workPrefix   = "airlock://work/"
	workTemplate = "airlock://work/{+path}"
)

// workURI is the resource URI of rel, a path relative to /work.
func workURI(rel string) string { return workPrefix + rel }

// addResources registers the /work template and the resources/list
// middleware that lists the MCP session's files.
func (s *Server) addResources(srv *mcp.Server, owner string) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "work",
		Title:       "Session work folder",
		Description: "A file in this MCP session's /work folder (for example airlock://work/outputs/result.csv).",
		URITemplate: workTemplate,
	}, s.readResource)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			lr, ok := req.(*mcp.ListResourcesRequest)
			if !ok {
				return next(ctx, method, req)
			}
			return s.listResources(ctx, lr, owner)
		}
	})
}

// fileLine is one file line of list_directory's output.
var fileLine = regexp.MustCompile(`^file  (.+) \((\d+) bytes\)$`)

// listResources lists the files of the MCP session's /work folder through
// the list_directory tool. A session that has not run a call yet has none.
func (s *Server) listResources(ctx context.Context, req *mcp.ListResourcesRequest, owner string) (*mcp.ListResourcesResult, error) {
	out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	st, ok := s.lookup(req.Session)
	if !ok {
		return out, nil
	}
	sid := st.current()
	if sid == "" {
		return out, nil
	}
	res := s.be.Run(ctx, dispatcher.Call{ID: callID(), Name: "list_directory", Owner: owner, SessionID: sid, Caller: callerMCP,
		Arguments: fmt.Appendf(nil, `{"path":"/work","recursive":true,"max_entries":%d}`, s.cfg.MaxResources)})
	if gone(res) {
		st.forget(sid)
		return out, nil
	}
	if res.Status != dispatcher.StatusOK {
		return nil, fmt.Errorf("mcpserver: list /work: %s: %s", res.Status, res.Answer.Message.Content)
	}
	for _, line := range strings.Split(res.Answer.Result.Stdout, "\n") {
		m := fileLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		size, _ := strconv.ParseInt(m[2], 10, 64)
		out.Resources = append(out.Resources, &mcp.Resource{URI: workURI(m[1]), Name: m[1], Size: size, MIMEType: mimeOf(m[1])})
	}
	return out, nil
}

// readResource reads a /work file of the MCP session.
func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rel, ok := strings.CutPrefix(uri, workPrefix)
	if !ok || rel == "" || path.IsAbs(rel) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	st, ok := s.lookup(req.Session)
	if !ok || st.current() == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	sid := st.current()
	data, err := s.be.ReadFile(ctx, st.owner, sid, rel)
	switch {
	case errors.Is(err, core.ErrNotFound):
		st.forget(sid)
		return nil, mcp.ResourceNotFoundError(uri)
	case errors.Is(err, core.ErrInvalid):
		return nil, mcp.ResourceNotFoundError(uri)
	case err != nil:
		return nil, fmt.Errorf("mcpserver: read %s: %w", uri, err)
	}
	rc := &mcp.ResourceContents{URI: uri, MIMEType: mimeOf(rel)}
	if utf8.Valid(data) && !strings.HasPrefix(rc.MIMEType, "image/") {
		rc.Text = string(data)
	} else {
		rc.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}

// mimeOf guesses a file's MIME type from its extension.
func mimeOf(name string) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}
