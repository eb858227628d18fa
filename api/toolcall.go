package api

import (
	"encoding/json"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
)

// toolCallRequest is the body of POST /v1/tool-calls: an OpenAI tool call
// plus the caller's context.
type toolCallRequest struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Index    *int   `json:"index,omitempty"` // accepted from streamed deltas, ignored
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
	SessionID string      `json:"session_id,omitempty"`
	Input     string      `json:"input,omitempty"` // an allowed input folder name
	Limits    *limitsBody `json:"limits,omitempty"`
}

// toolMessage is the role "tool" message to hand back to the model.
type toolMessage struct {
	Role       string `json:"role"`
	ToolCallID string `json:"tool_call_id"`
	Content    string `json:"content"`
}

// artifactView is an artifact in a JSON answer: metadata and a URL.
type artifactView struct {
	ID     string `json:"id,omitempty"`
	Name   string `json:"name"`
	MIME   string `json:"mime"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	URL    string `json:"url,omitempty"` // absent when the bytes were not kept
	// Error says why the bytes were not kept (quota: the key's artifact
	// quota is full; too_large, busy, unavailable).
	Error *Error `json:"error,omitempty"`
}

// toolResult is the structured outcome of a call.
type toolResult struct {
	ToolCallID    string            `json:"tool_call_id"`
	Name          string            `json:"name"`
	Status        string            `json:"status"`
	Reason        string            `json:"reason,omitempty"`
	Fields        map[string]string `json:"fields,omitempty"`
	ApprovalToken string            `json:"approval_token,omitempty"`
	DurationMS    int64             `json:"duration_ms"`
	ExitCode      *int              `json:"exit_code,omitempty"`
	Stdout        string            `json:"stdout"`
	Stderr        string            `json:"stderr"`
	Truncated     bool              `json:"truncated"`
	Message       string            `json:"message,omitempty"`
	Warnings      []string          `json:"warnings,omitempty"`
	Artifacts     []artifactView    `json:"artifacts"`
	SessionID     string            `json:"session_id,omitempty"`
	SessionEnded  bool              `json:"session_ended,omitempty"`
	// Error is the exception that ended the code, as data.
	Error *core.ExecError `json:"error,omitempty"`
	// ExecutionCount numbers the session's calls (1 for a one-shot call).
	ExecutionCount int `json:"execution_count,omitempty"`
	// Display holds rich outputs (MIME bundles) in the order produced.
	Display []core.Display `json:"display,omitempty"`
	// Dropped counts output bytes cut from the middle of each stream.
	Dropped *core.Dropped `json:"dropped,omitempty"`
	// KernelRestarted: the session's Python state was lost during the call.
	KernelRestarted bool `json:"kernel_restarted,omitempty"`
}

// toolCallResponse is the 200 answer of a tool call.
type toolCallResponse struct {
	Message toolMessage `json:"message"`
	Result  toolResult  `json:"result"`
}

// validate checks the call is well formed; what it asks for is the
// dispatcher's business.
func (r *toolCallRequest) validate() error {
	if r.Type != "" && r.Type != "function" {
		return newError(core.ErrInvalid, `"type" must be "function"`)
	}
	if strings.TrimSpace(r.Function.Name) == "" {
		return newError(core.ErrInvalid, `"function.name" is required`)
	}
	return nil
}

// buildResponse turns a dispatcher result into the answer, storing artifact
// bytes and replacing them with download URLs (session ones when session
// is not empty).
func (s *Server) buildResponse(owner, session string, res dispatcher.Result) toolCallResponse {
	out := toolCallResponse{
		Message: toolMessage{Role: "tool", ToolCallID: res.CallID, Content: res.Content},
		Result: toolResult{
			ToolCallID:    res.CallID,
			Name:          res.Name,
			Status:        string(res.Status),
			Reason:        res.Reason,
			Fields:        res.Fields,
			ApprovalToken: res.ApprovalToken,
			DurationMS:    res.DurationMS,
			SessionID:     session,
			Artifacts:     []artifactView{},
		},
	}
	sb := res.Sandbox
	if sb == nil {
		return out
	}
	exit := sb.ExitCode
	r := &out.Result
	r.ExitCode = &exit
	r.Stdout, r.Stderr, r.Truncated = sb.Stdout, sb.Stderr, sb.Truncated
	r.Message, r.SessionEnded = sb.Message, sb.SessionEnded
	r.Error, r.ExecutionCount, r.Display, r.KernelRestarted = sb.Error, sb.ExecutionCount, sb.Display, sb.KernelRestarted
	dropped := sb.Dropped
	r.Dropped = &dropped
	r.Warnings = append([]string(nil), sb.Warnings...)
	var warns []string
	r.Artifacts, warns = s.storeArtifacts(owner, session, sb.Artifacts)
	r.Warnings = append(r.Warnings, warns...)
	return out
}

// storeArtifacts re-validates a result's artifacts (checkArtifacts), keeps
// their bytes in the store and returns their views, with download URLs
// (session ones when session is not empty), and warnings for what was
// dropped or not kept.
func (s *Server) storeArtifacts(owner, session string, arts []core.Artifact) ([]artifactView, []string) {
	views := []artifactView{}
	if len(arts) == 0 {
		return views, nil
	}
	checked, warns := checkArtifacts(arts, s.cfg.ArtifactMaxPerCall, s.cfg.ArtifactMaxCallBytes)
	for _, a := range checked {
		v := artifactView{Name: a.Name, MIME: a.MIME, Size: a.Size, SHA256: a.SHA256}
		id, e := s.artifacts.put(owner, session, a)
		if id != "" {
			v.ID = id
			if session == "" {
				v.URL = "/v1/artifacts/" + id
			} else {
				v.URL = "/v1/sessions/" + session + "/artifacts/" + id
			}
		} else {
			v.Error = e
			warns = append(warns, e.Message)
		}
		views = append(views, v)
	}
	return views, warns
}

// statusError maps a platform outcome of the dispatcher, or a call whose
// arguments ask past the key's ceiling (Result.Code bad_request), to an
// HTTP error; user-code outcomes and other refusals return nil (HTTP 200). The error carries
// the tool message in its details, for callers that hand it to a model.
func statusError(res dispatcher.Result, msg toolMessage) *Error {
	var e *Error
	switch res.Status {
	case dispatcher.StatusBusy:
		e = newError(core.ErrBusy, "the sandbox is busy; retry later")
	case dispatcher.StatusSessionNotFound:
		e = newError(core.ErrNotFound, "session not found")
	case dispatcher.StatusSessionLost:
		e = newError(core.ErrSessionLost, "the worker holding the session is gone; open a new session")
	case dispatcher.StatusUnavailable:
		e = newError(core.ErrUnavailable, "the execution backend is unavailable")
	case dispatcher.StatusInternal:
		e = newError(core.ErrInternal, "internal error")
	case dispatcher.StatusRejected:
		if res.Code != core.ErrInvalid { // a refusal for the model: HTTP 200
			return nil
		}
		e = newError(core.ErrInvalid, res.Content) // the arguments asked past the key's ceiling
	default:
		return nil
	}
	return e.withDetails(map[string]any{"status": string(res.Status), "tool_message": msg})
}
