package main

import (
	"context"

	"github.com/openai/openai-go/v3"

	"github.com/airlock-dev/airlock/core"
	"github.com/airlock-dev/airlock/dispatcher"
	"github.com/airlock-dev/airlock/environments"
	"github.com/airlock-dev/airlock/internal/jobs"
	"github.com/airlock-dev/airlock/keys"
	"github.com/airlock-dev/airlock/sandbox"
)

// agentTools adapts the dispatcher to the agent's Tools interface.
type agentTools struct {
	*dispatcher.Dispatcher
	// keys, when set, adds each owner's keys-file policy to the calls of
	// its runs: approval settings and the limits ceiling.
	keys *keys.Set
}

// Run runs call with its owner's approval_tools, require_approval and
// ceiling, as the API does for the owner's own calls.
func (t agentTools) Run(ctx context.Context, call dispatcher.Call) dispatcher.Result {
	if t.keys == nil { // a local run: the operator's own
		call.Environments = []string{dispatcher.AllEnvironments}
	}
	if p := t.keys.Policy(call.Owner); p != nil {
		call.ApprovalTools = append(call.ApprovalTools, p.ApprovalTools...)
		call.RequireApproval = append(call.RequireApproval, p.RequireApproval...)
		d := sandbox.DefaultConfig()
		call.Ceiling = p.Ceiling(d.Defaults, d.Max)
		if p.IsAdmin() {
			call.Environments = []string{dispatcher.AllEnvironments}
		} else {
			call.Environments = p.Environments
		}
	}
	return t.Dispatcher.Run(ctx, call)
}

// OpenAITools is the registry's OpenAI tool list.
func (t agentTools) OpenAITools() []openai.ChatCompletionToolUnionParam {
	return t.Registry().OpenAITools()
}

// SystemPrompt is the registry's generated tool description.
func (t agentTools) SystemPrompt() string { return t.Registry().SystemPrompt() }

// apiDispatcher adapts the dispatcher to the API's Dispatcher interface.
type apiDispatcher struct{ *dispatcher.Dispatcher }

// ToolsJSON is the registry as an OpenAI tools array.
func (d apiDispatcher) ToolsJSON() []map[string]any { return d.Registry().OpenAIToolsJSON() }

// apiSessions adapts the jobs client to the API's Sessions interface.
type apiSessions struct {
	*jobs.Client
	// egress, when set, is the network policy of owner's sessions (the
	// key's egress=, issue 29): the session's container gets a door.
	// The environment's egress list (nil: none) narrows it.
	egress func(owner string, envEgress []string) string
}

// Open opens a session on some worker.
func (s apiSessions) Open(ctx context.Context, owner string, limits core.Limits, background bool) (string, error) {
	return s.OpenIn(ctx, owner, environments.Target{}, limits, background)
}

// OpenIn opens a session in an environment on some worker, with the
// owner's network policy narrowed by the environment's.
func (s apiSessions) OpenIn(ctx context.Context, owner string, env environments.Target, limits core.Limits, background bool) (string, error) {
	req := core.Request{Owner: owner, Limits: limits, Background: background}
	env.Apply(&req)
	if s.egress != nil {
		req.Egress = s.egress(owner, env.Egress)
	}
	return s.OpenSessionRequest(ctx, req)
}

// Close destroys a session.
func (s apiSessions) Close(ctx context.Context, owner, id string) error {
	return s.CloseSession(ctx, owner, id)
}

// redactingEngine is a worker's engine behind --secrets-file: what an
// execution returns, live output included, is redacted before it leaves
// the worker, so the secrets never reach the queue. File transfers and
// session operations pass as they are, as they do at the dispatcher.
type redactingEngine struct {
	jobs.Engine
	red *dispatcher.Redactor
}

// Handle runs req, redacting an execution's events and result.
func (e redactingEngine) Handle(ctx context.Context, req core.Request) (core.Result, error) {
	if req.Op != core.OpExec && req.Op != "" {
		return e.Engine.Handle(ctx, req)
	}
	ctx, stop := e.red.Stream(ctx)
	res, err := e.Engine.Handle(ctx, req)
	stop()
	return e.red.Result(res), err
}
