package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/airlock-dev/airlock/client"
	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/wire"
)

// maxInlineArtifact caps the bytes of one artifact downloaded to be
// inlined in a tool result (image content, embedded resource).
const maxInlineArtifact = 4 << 20

// remote is the Backend of a running `airlock serve`: every call goes to
// its /v1 routes through the Go client (and so through its dispatcher);
// MCP sessions map to its sessions, files to its file routes.
type remote struct {
	c        *client.Client
	server   string
	tools    []Tool
	sessions bool
}

// RemoteConfig tunes a remote Backend.
type RemoteConfig struct {
	// Server is the server's URL, for messages.
	Server string
	// Logger receives the warnings; nil discards them.
	Logger *slog.Logger
}

// NewRemote returns the Backend of the server c talks to. It reads the
// server's /v1/tools once, so the MCP tools are exactly the server's, and
// /v1/info to know whether the server has sessions (without them every
// call runs one-shot). When the server cannot list its tools at start
// (unreachable, or the key refused) the built-in registry's are served:
// every call still goes to the server, whose answer then tells the model
// what is wrong.
func NewRemote(ctx context.Context, c *client.Client, cfg RemoteConfig) (Backend, error) {
	if c == nil {
		return nil, errors.New("mcpserver: remote backend: a client is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &remote{c: c, server: cfg.Server, sessions: true}
	if info, err := c.GetInfo(ctx); err == nil {
		r.sessions = info.Sessions
	}
	list, err := c.ListTools(ctx)
	if err != nil {
		log.Warn("mcp: cannot list the server's tools; serving the built-in list, calls will report the server's answer", "err", describe(err, cfg.Server))
		r.tools = RegistryTools(dispatcher.BuiltinRegistry(dispatcher.DefaultConfig()))
		return r, nil
	}
	for _, t := range list {
		var params map[string]any
		if err := json.Unmarshal(t.Function.Parameters, &params); err != nil {
			return nil, fmt.Errorf("mcpserver: remote backend: tool %s: parameters: %w", t.Function.Name, err)
		}
		r.tools = append(r.tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	return r, nil
}

// Tools implements Backend: the server's /v1/tools.
func (r *remote) Tools() []Tool { return r.tools }

// Instructions implements Backend.
func (r *remote) Instructions() string {
	return "Airlock's sandboxed tools, run by the Airlock server at " + r.server +
		". Each call runs in an isolated sandbox with no network; the calls of this MCP session share one sandbox session " +
		"(Python variables and /work files persist). Arguments must be a JSON object matching the tool's parameters; a refused call explains what to fix."
}

// Run implements Backend: POST /v1/sessions/{id}/tool-calls, or
// /v1/tool-calls without a session; the server's answer is the outcome as
// it is, artifact bytes downloaded. An error answer of the server is an
// outcome whose message says what the server answered.
func (r *remote) Run(ctx context.Context, call dispatcher.Call) Outcome {
	tc := client.ToolCall{ID: call.ID, Name: call.Name, Arguments: json.RawMessage(call.Arguments), Limits: apiLimits(call.Limits), Environment: call.Environment}
	var res *wire.ToolCallResponse
	var err error
	if call.SessionID == "" {
		res, err = r.c.CallTool(ctx, tc)
	} else {
		res, err = r.c.CallSessionTool(ctx, call.SessionID, tc)
	}
	if err != nil {
		return r.failed(call, err)
	}
	if res.Result.Status == wire.StatusPendingApproval {
		// The REST API resolves held calls only inside agent runs.
		return refused(call, dispatcher.StatusRejected, res.Result.Reason,
			"this call needs human approval, which the remote Airlock server grants only inside its agent runs; the call did not run")
	}
	return Outcome{Status: dispatcher.Status(res.Result.Status), Answer: *res, Files: r.download(ctx, res.Result.Artifacts)}
}

// failed turns an error answer into an outcome: a session the server no
// longer knows is StatusSessionNotFound (the Server then moves to a new
// one), anything else keeps the server's code and message.
func (r *remote) failed(call dispatcher.Call, err error) Outcome {
	var ae *client.APIError
	st := dispatcher.StatusUnavailable
	reason := ""
	switch {
	case !errors.As(err, &ae):
	case ae.Code == core.ErrNotFound && call.SessionID != "":
		st = dispatcher.StatusSessionNotFound
	case (ae.Code == core.ErrNotFound || ae.Code == core.ErrForbidden) && call.Environment != "":
		// The environment the call named is unknown, or not the key's:
		// a refusal naming it, as the local dispatcher answers, not
		// "unavailable" (retrying would not help).
		st, reason = dispatcher.StatusRejected, "environment"
	case ae.Code == core.ErrSessionLost:
		st = dispatcher.StatusSessionLost
	case ae.Code == core.ErrBusy || ae.Code == core.ErrRateLimited || ae.Code == core.ErrQuota:
		st = dispatcher.StatusBusy
	case ae.StatusCode == 400 || ae.StatusCode == 401 || ae.StatusCode == 413:
		st = dispatcher.StatusRejected
	}
	return refused(call, st, reason, describe(err, r.server))
}

// download fetches the bytes of the kept artifacts (up to
// maxInlineArtifact each), so plots become image content as they do
// locally.
func (r *remote) download(ctx context.Context, arts []wire.Artifact) [][]byte {
	files := make([][]byte, len(arts))
	for i, a := range arts {
		if a.Size > maxInlineArtifact || a.URL == "" {
			continue
		}
		if d, err := r.c.DownloadArtifact(ctx, a); err == nil {
			files[i] = d.Data
		}
	}
	return files
}

// Approve implements Backend; the REST API has no route for held tool
// calls outside runs, and Run never hands one out.
func (r *remote) Approve(context.Context, string) (Outcome, error) {
	return Outcome{}, core.Errorf("mcpserver: approve", core.ErrNotFound, "the remote server resolves approvals only inside agent runs")
}

// Reject implements Backend (see Approve).
func (r *remote) Reject(context.Context, string, string) (Outcome, error) {
	return Outcome{}, core.Errorf("mcpserver: reject", core.ErrNotFound, "the remote server resolves approvals only inside agent runs")
}

// OpenSession implements Backend: POST /v1/sessions. A mount cannot be
// sent to a server (its operator allows input folders).
func (r *remote) OpenSession(ctx context.Context, _ string, limits core.Limits, mount string) (string, error) {
	if mount != "" {
		return "", core.Errorf("mcpserver: open session", core.ErrInvalid, "a host folder cannot be mounted on a remote server")
	}
	if !r.sessions {
		return "", nil
	}
	s, err := r.c.CreateSession(ctx, apiLimits(limits))
	if err != nil {
		return "", apiErr("open session", err, r.server)
	}
	return s.ID, nil
}

// CloseSession implements Backend: DELETE /v1/sessions/{id}.
func (r *remote) CloseSession(ctx context.Context, _ string, id string) error {
	if err := r.c.DeleteSession(ctx, id); err != nil {
		return apiErr("close session "+id, err, r.server)
	}
	return nil
}

// ReadFile implements Backend: GET /v1/sessions/{id}/files/{path}.
func (r *remote) ReadFile(ctx context.Context, _ string, id, path string) ([]byte, error) {
	d, err := r.c.GetSessionFile(ctx, id, path)
	if err != nil {
		return nil, apiErr("read "+path, err, r.server)
	}
	return d.Data, nil
}

// apiErr wraps an error answer with the API's code as a core.Code, so
// errors.Is(err, core.ErrNotFound) works as it does locally.
func apiErr(op string, err error, server string) error {
	var ae *client.APIError
	code := core.ErrUnavailable
	if errors.As(err, &ae) && ae.Code != "" {
		code = ae.Code
	}
	return core.E("mcpserver: "+op, code, errors.New(describe(err, server)))
}

// describe says in one sentence what the server answered, with the hint
// that helps: the key for 401, the wait for 429 and 503.
func describe(err error, server string) string {
	var ae *client.APIError
	if !errors.As(err, &ae) {
		return fmt.Sprintf("the Airlock server at %s cannot be reached: %v", server, err)
	}
	var b strings.Builder
	code := string(ae.Code)
	if code == "" {
		code = "error"
	}
	fmt.Fprintf(&b, "the Airlock server at %s answered %d %s", server, ae.StatusCode, code)
	if ae.Message != "" {
		fmt.Fprintf(&b, ": %s", ae.Message)
	}
	switch {
	case ae.StatusCode == 401:
		b.WriteString(" (check the key given with --key or AIRLOCK_API_KEY)")
	case ae.RetryAfter > 0:
		fmt.Fprintf(&b, "; retry after %s", ae.RetryAfter)
	case ae.Temporary():
		b.WriteString("; retry later")
	}
	if tm, ok := ae.Details["tool_message"].(map[string]any); ok {
		if c, _ := tm["content"].(string); c != "" && !strings.Contains(b.String(), c) {
			fmt.Fprintf(&b, "\n%s", c)
		}
	}
	return b.String()
}

// apiLimits converts limits to the API's (nil: none).
func apiLimits(l core.Limits) *wire.Limits {
	if l == (core.Limits{}) {
		return nil
	}
	return &wire.Limits{MemoryBytes: l.Memory, CPUs: l.CPUs, Pids: l.Pids, TimeoutSeconds: l.Timeout.Seconds()}
}
