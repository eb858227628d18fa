package api

import (
	"context"
	"errors"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/artifacts"
	"github.com/airlock-dev/airlock/wire"
)

// checkToolCall checks req is well formed; what it asks for is the
// dispatcher's business.
func checkToolCall(req *wire.ToolCallRequest) error {
	if req.Type != "" && req.Type != "function" {
		return newError(core.ErrInvalid, `"type" must be "function"`)
	}
	if strings.TrimSpace(req.Function.Name) == "" {
		return newError(core.ErrInvalid, `"function.name" is required`)
	}
	return nil
}

// newCall checks owner's req (its form, its limits against owner's
// ceiling, its input folder) and builds the dispatcher call made by
// caller ("api", "batch"), without a session.
func (s *Server) newCall(owner string, req *wire.ToolCallRequest, caller string) (dispatcher.Call, error) {
	if err := checkToolCall(req); err != nil {
		return dispatcher.Call{}, err
	}
	limits, err := limitsOf(req.Limits)
	if err == nil {
		err = s.checkCeiling(owner, limits)
	}
	if err != nil {
		return dispatcher.Call{}, err
	}
	mount, err := s.inputFolder(req.Input)
	if err != nil {
		return dispatcher.Call{}, err
	}
	var approvalTools, requireApproval []string
	if p := s.policy(owner); p != nil {
		approvalTools, requireApproval = p.ApprovalTools, p.RequireApproval
	}
	return dispatcher.Call{
		ApprovalTools:   approvalTools,
		RequireApproval: requireApproval,
		ID:              req.ID,
		Name:            req.Function.Name,
		Arguments:       req.Function.Arguments,
		Owner:           owner,
		Mount:           mount,
		MountName:       req.Input,
		Limits:          limits,
		Ceiling:         s.ceiling(owner),
		Caller:          caller,
	}, nil
}

// buildResponse turns a dispatcher result into the answer, keeping
// artifact bytes in the store and replacing them with download URLs
// (session ones when session is not empty).
func (s *Server) buildResponse(ctx context.Context, owner, session string, res dispatcher.Result) wire.ToolCallResponse {
	out := wire.ToolCallResponse{
		Message: wire.ToolMessage{Role: "tool", ToolCallID: res.CallID, Content: res.Content},
		Result: wire.ToolResult{
			ToolCallID:    res.CallID,
			Name:          res.Name,
			Status:        core.Status(res.Status),
			Reason:        res.Reason,
			Fields:        res.Fields,
			ApprovalToken: res.ApprovalToken,
			DurationMS:    res.DurationMS,
			SessionID:     session,
			Artifacts:     []wire.Artifact{},
		},
	}
	sb := res.Sandbox
	if sb == nil {
		return out
	}
	exit, dropped := sb.ExitCode, sb.Dropped
	r := &out.Result
	r.ExitCode, r.Dropped = &exit, &dropped
	r.Stdout, r.Stderr, r.Truncated = sb.Stdout, sb.Stderr, sb.Truncated
	r.Message, r.SessionEnded = sb.Message, sb.SessionEnded
	r.Error, r.ExecutionCount, r.Display, r.KernelRestarted = sb.Error, sb.ExecutionCount, sb.Display, sb.KernelRestarted
	r.Warnings = append([]string(nil), sb.Warnings...)
	var warns []string
	r.Artifacts, warns = s.keepArtifacts(ctx, owner, session, sb.Artifacts)
	r.Warnings = append(r.Warnings, warns...)
	return out
}

// keepArtifacts re-checks a result's artifacts, keeps their bytes in the
// store and returns them as the answer shows them: with download URLs
// (session ones when session is not empty), or with the error saying why
// they were not kept; and warnings for what was dropped or not kept.
func (s *Server) keepArtifacts(ctx context.Context, owner, session string, arts []core.Artifact) ([]wire.Artifact, []string) {
	kept, warns := s.artifacts.Keep(context.WithoutCancel(ctx), owner, session, arts, s.cfg.ArtifactMaxPerCall, s.cfg.ArtifactMaxCallBytes)
	views := make([]wire.Artifact, 0, len(kept))
	for _, k := range kept {
		v := wire.Artifact{ID: k.ID, Name: k.Name, MIME: k.MIME, Size: k.Size, SHA256: k.SHA256}
		switch {
		case k.ID != "":
			v.URL = artifactURL(session, k.ID)
		case k.Err != nil:
			v.Error = notKept(k.Err)
		}
		views = append(views, v)
	}
	return views, warns
}

// notKept is the error object of an artifact that was not kept: the
// store's own code, message and details.
func notKept(err error) *wire.Error {
	var nk *artifacts.NotKept
	if errors.As(err, &nk) {
		return &wire.Error{Code: nk.Code, Message: nk.Message, Details: nk.Details}
	}
	return &toError(nil, err).errorObject
}

// artifactURL is the download path of artifact id of session ("" for a
// one-shot call).
func artifactURL(session, id string) string {
	if session == "" {
		return "/v1/artifacts/" + id
	}
	return "/v1/sessions/" + session + "/artifacts/" + id
}

// statusError maps a platform outcome of the dispatcher to an HTTP error;
// user-code outcomes and refusals return nil (HTTP 200). The error carries
// the tool message in its details, for callers that hand it to a model.
func statusError(res dispatcher.Result, msg wire.ToolMessage) *Error {
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
	default:
		return nil
	}
	return e.withDetails(map[string]any{"status": string(res.Status), "tool_message": msg})
}
