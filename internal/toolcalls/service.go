package toolcalls

import (
	"context"
	"errors"
	"strings"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/internal/artifacts"
	"github.com/airlock-dev/airlock/internal/idempotency"
	"github.com/airlock-dev/airlock/internal/sessionrecords"
	"github.com/airlock-dev/airlock/internal/snapshots"
	"github.com/airlock-dev/airlock/wire"
)

// Config configures a Service.
type Config struct {
	Grants
	// MaxArtifacts and MaxArtifactBytes bound what one call's result may
	// bring in, re-checked whatever the sandbox says.
	MaxArtifacts     int
	MaxArtifactBytes int64
}

// Service is the tool-call service. It is safe for concurrent use.
type Service struct {
	Grants
	cfg       Config
	artifacts *artifacts.Store
	sessions  *sessionrecords.Store
	idem      *idempotency.Keys
	resumes   *snapshots.Resumes // nil: a lost session is gone for good
}

// New returns the service over the artifact store, the session records
// and the idempotency keys.
func New(cfg Config, arts *artifacts.Store, sessions *sessionrecords.Store, idem *idempotency.Keys) *Service {
	return &Service{Grants: cfg.Grants, cfg: cfg, artifacts: arts, sessions: sessions, idem: idem}
}

// Check checks req is well formed; what it asks for is the dispatcher's
// business.
func Check(req *wire.ToolCallRequest) error {
	if req.Type != "" && req.Type != "function" {
		return invalid(`"type" must be "function"`)
	}
	if strings.TrimSpace(req.Function.Name) == "" {
		return invalid(`"function.name" is required`)
	}
	return nil
}

// Call checks owner's req (its form, its limits against owner's ceiling,
// its input folder) and builds the dispatcher call made by caller ("api",
// "batch"), without its session.
func (s *Service) Call(owner string, req *wire.ToolCallRequest, caller string) (dispatcher.Call, error) {
	return s.call(owner, req, caller, s.Ceiling(owner))
}

// CallIn is Call for a call in a session whose own limits are session:
// the call's timeout may be up to the session's per-call limit even where
// owner's ceiling is lower (a notebook cell of a session opened with the
// session call timeout may name any timeout up to it).
func (s *Service) CallIn(owner string, req *wire.ToolCallRequest, caller string, session core.Limits) (dispatcher.Call, error) {
	ceiling := s.Ceiling(owner)
	ceiling.Timeout = max(ceiling.Timeout, session.Timeout)
	return s.call(owner, req, caller, ceiling)
}

// call is Call with the ceiling the request's limits are checked against.
func (s *Service) call(owner string, req *wire.ToolCallRequest, caller string, ceiling core.Limits) (dispatcher.Call, error) {
	if err := Check(req); err != nil {
		return dispatcher.Call{}, err
	}
	limits, err := s.convert(req.Limits)
	if err == nil {
		err = s.checkAgainst(ceiling, limits)
	}
	if err != nil {
		return dispatcher.Call{}, err
	}
	mount, err := s.Input(req.Input)
	if err != nil {
		return dispatcher.Call{}, err
	}
	call := dispatcher.Call{ID: req.ID, Name: req.Function.Name, Arguments: req.Function.Arguments, Owner: owner,
		Mount: mount, MountName: req.Input, Limits: limits, Ceiling: ceiling, Caller: caller, Notebook: req.Notebook}
	if p := s.Policy(owner); p != nil {
		call.ApprovalTools, call.RequireApproval = p.ApprovalTools, p.RequireApproval
	}
	call.Environment, call.Environments = req.Environment, s.Environments(owner)
	return call, nil
}

// Answer is the answer of dispatcher result res of a call in session (""
// for a one-shot call): the tool message and the structured result, its
// artifacts described without URLs.
func Answer(res dispatcher.Result, session string) wire.ToolCallResponse {
	out := wire.ToolCallResponse{
		Message: wire.ToolMessage{Role: "tool", ToolCallID: res.CallID, Content: res.Content},
		Result: wire.ToolResult{ToolCallID: res.CallID, Name: res.Name, Status: core.Status(res.Status), Reason: res.Reason,
			Fields: res.Fields, ApprovalToken: res.ApprovalToken, DurationMS: res.DurationMS, SessionID: session,
			Artifacts: []wire.Artifact{}, Network: res.Network},
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
	if sb.Resumed {
		r.Resumed, r.WakeMS, r.ResumeSkipped = true, sb.WakeMS, make([]wire.SnapshotSkip, 0, len(sb.ResumeSkipped))
		for _, k := range sb.ResumeSkipped {
			r.ResumeSkipped = append(r.ResumeSkipped, wire.SnapshotSkip{Name: k.Name, Type: k.Type, Reason: k.Reason})
		}
	}
	for _, a := range sb.Artifacts {
		r.Artifacts = append(r.Artifacts, wire.Artifact{Name: a.Name, MIME: a.MIME, Size: a.Size, SHA256: a.SHA256})
	}
	return out
}

// Finish records what call did to its session (touched, or forgotten when
// the sandbox says it is gone; a caller who went away does not end it)
// and builds its answer, keeping its artifacts.
func (s *Service) Finish(ctx context.Context, call dispatcher.Call, res dispatcher.Result) wire.ToolCallResponse {
	if res.CallID == "" {
		res.CallID = call.ID
	}
	if res.Name == "" {
		res.Name = call.Name
	}
	bg := context.WithoutCancel(ctx)
	if id := call.SessionID; id != "" {
		if res.Status == dispatcher.StatusSessionLost && s.resumable(bg, call.Owner, id) {
			// its worker died during the call: the session comes back
			// from its last snapshot with its next call
		} else if res.Status == dispatcher.StatusSessionNotFound || res.Status == dispatcher.StatusSessionLost ||
			(res.Sandbox != nil && res.Sandbox.SessionEnded) {
			s.sessions.Remove(bg, call.Owner, id)
		} else {
			s.sessions.Touch(bg, call.Owner, id) // the sandbox counts idle time from the call's end
		}
	}
	var arts []core.Artifact
	if res.Sandbox != nil {
		arts = res.Sandbox.Artifacts
	}
	out := Answer(res, call.SessionID)
	var warns []string
	out.Result.Artifacts, warns = s.KeepArtifacts(bg, call.Owner, call.SessionID, arts)
	out.Result.Warnings = append(out.Result.Warnings, warns...)
	return out
}

// KeepArtifacts re-checks a result's artifacts, keeps their bytes and
// returns them as answers show them: with download URLs (session ones
// when session is not empty), or with the error saying why they were not
// kept; and warnings for what was dropped or not kept.
func (s *Service) KeepArtifacts(ctx context.Context, owner, session string, arts []core.Artifact) ([]wire.Artifact, []string) {
	kept, warns := s.artifacts.Keep(ctx, owner, session, arts, s.cfg.MaxArtifacts, s.cfg.MaxArtifactBytes)
	views := make([]wire.Artifact, 0, len(kept))
	for _, k := range kept {
		v := wire.Artifact{ID: k.ID, Name: k.Name, MIME: k.MIME, Size: k.Size, SHA256: k.SHA256}
		var nk *artifacts.NotKept
		switch {
		case k.ID != "":
			v.URL = ArtifactURL(session, k.ID)
		case errors.As(k.Err, &nk):
			v.Error = &wire.Error{Code: nk.Code, Message: nk.Message, Details: nk.Details}
		case k.Err != nil:
			v.Error = &wire.Error{Code: core.CodeOf(k.Err), Message: k.Err.Error()}
		}
		views = append(views, v)
	}
	return views, warns
}

// ArtifactURL is the download path of artifact id of session ("" for a
// one-shot call).
func ArtifactURL(session, id string) string {
	if session == "" {
		return "/v1/artifacts/" + id
	}
	return "/v1/sessions/" + session + "/artifacts/" + id
}

// Failure is the platform failure a dispatcher result reports, with a
// message fit for the caller: busy, not_found (the session), session_lost,
// unavailable, internal, or bad_request for a call whose arguments asked
// past the key's ceiling. It is nil for an outcome of the code or another
// refusal (those are answers).
func Failure(res dispatcher.Result) error {
	var code core.Code
	var msg string
	switch res.Status {
	case dispatcher.StatusBusy:
		code, msg = core.ErrBusy, "the sandbox is busy; retry later"
	case dispatcher.StatusSessionNotFound:
		code, msg = core.ErrNotFound, "session not found"
	case dispatcher.StatusSessionLost:
		code, msg = core.ErrSessionLost, "the worker holding the session is gone; open a new session"
	case dispatcher.StatusUnavailable:
		code, msg = core.ErrUnavailable, "the execution backend is unavailable"
	case dispatcher.StatusInternal:
		code, msg = core.ErrInternal, "internal error"
	case dispatcher.StatusRejected:
		switch res.Code {
		case core.ErrInvalid, core.ErrNotFound, core.ErrForbidden, core.ErrConflict:
			// the arguments asked past the key's ceiling, or the call's
			// environment is malformed, unknown, forbidden or not built
			code, msg = res.Code, strings.TrimSuffix(res.Content, " The call did not run.")
		default: // a refusal for the model
			return nil
		}
	default:
		return nil
	}
	return core.Errorf("", code, msg)
}
