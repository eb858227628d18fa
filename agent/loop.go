package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Causes a run's context can end with.
var (
	errCancelled  = errors.New("run cancelled")
	errWallBudget = errors.New("wall-clock budget spent")
	errShutdown   = errors.New("manager closed")
)

// loop runs conversations against one model and one set of tools.
type loop struct {
	cfg    Config
	tools  Tools
	model  *model
	store  pendingStore
	logger *slog.Logger
	redact *redactor
	caller string
	now    func() time.Time
}

// outcome is how a run ended.
type outcome struct {
	status RunStatus
	final  string
	err    error
}

// execute runs r to the end and records the outcome.
func (l *loop) execute(ctx context.Context, r *run) outcome {
	o := l.steps(ctx, r)
	if o.err != nil {
		l.logger.Warn("run ended with an error", "run", r.id, "status", o.status, "err", l.redact.String(o.err.Error()))
	}
	l.releasePending(r)
	return o
}

// ctxOutcome maps a done context to the run's final status.
func ctxOutcome(ctx context.Context) outcome {
	cause := context.Cause(ctx)
	if errors.Is(cause, errWallBudget) {
		return outcome{status: RunBudget, err: errWallBudget}
	}
	if cause == nil {
		cause = errCancelled
	}
	return outcome{status: RunCancelled, err: cause}
}

// steps is the loop proper.
func (l *loop) steps(ctx context.Context, r *run) outcome {
	tools := l.tools.OpenAITools()
	schema := schemaTokens(tools)
	system := l.tools.SystemPrompt()
	if l.cfg.SystemPrompt != "" {
		system = strings.TrimSpace(system + "\n\n" + l.cfg.SystemPrompt)
	}
	msgs, err := initialMessages(system, r.req)
	if err != nil {
		return outcome{status: RunFailed, err: err}
	}
	ids := newIDAssigner()
	for _, m := range msgs {
		ids.observe(m.ToolCallID)
		for _, c := range m.ToolCalls {
			ids.observe(c.ID)
		}
	}
	seen := newRepeats(l.cfg.MaxRepeats)
	maxSteps := l.cfg.MaxSteps
	if r.req.MaxSteps > 0 { // a request may lower the limit, never raise it
		maxSteps = min(r.req.MaxSteps, maxSteps)
	}
	modelName := r.req.Model
	if modelName == "" {
		modelName = l.model.provider.Model
	}
	for step := 1; ; step++ {
		if ctx.Err() != nil {
			return ctxOutcome(ctx)
		}
		last := step > maxSteps
		r.update(func(r *run) { r.steps = step })
		r.log.emit(EventStepStarted, step, map[string]any{"max_steps": maxSteps, "final": last})
		req := chatRequest{Model: modelName, Stream: l.cfg.Stream, Temp: l.cfg.Temperature, Step: step}
		stepSchema := schema
		if last {
			msgs = append(msgs, message{Role: "user", Content: l.cfg.ConcludePrompt})
			stepSchema = 0
		} else {
			req.Tools = tools
		}
		if l.cfg.ContextBudget > 0 {
			limit := int(float64(l.cfg.ContextBudget) * l.cfg.ContextHighWater)
			if n := shortenContext(msgs, stepSchema, limit, l.cfg.ShortenedChars); n > 0 {
				l.logger.Info("shortened old tool results", "run", r.id, "step", step, "count", n)
			}
		}
		req.Messages = msgs
		start := time.Now()
		rep, err := l.model.chat(ctx, req, func(attempt int, wait time.Duration, err error) {
			r.log.emit(EventError, step, map[string]any{
				"message": "model call failed: " + err.Error(), "retrying": true, "attempt": attempt, "wait_ms": wait.Milliseconds(),
			})
		})
		su := stepUsage(rep, msgs, stepSchema, time.Since(start))
		r.update(func(r *run) { addUsage(&r.usage, su) })
		if err != nil {
			if ctx.Err() != nil {
				return ctxOutcome(ctx)
			}
			return outcome{status: RunFailed, err: err}
		}
		calls := rep.ToolCalls
		if last {
			calls = nil // a server that ignores "no tools" still gets no tool run
		}
		ids.assign(calls)
		for i := range calls {
			calls[i].Arguments = l.redact.String(calls[i].Arguments)
		}
		msgs = append(msgs, message{Role: "assistant", Content: rep.Content, ToolCalls: calls})
		r.log.emit(EventAssistantMessage, step, assistantData(rep, calls, su))
		if len(calls) == 0 {
			status := RunDone
			if last {
				status = RunMaxSteps
			}
			r.log.emit(EventFinalAnswer, step, map[string]any{"content": rep.Content})
			return outcome{status: status, final: rep.Content}
		}
		if b := l.cfg.TokenBudget; b > 0 && r.view().Usage.TotalTokens >= b {
			return outcome{status: RunBudget, err: fmt.Errorf("token budget of %d spent", b)}
		}
		results, stop := l.runCalls(ctx, r, step, calls, seen)
		if ctx.Err() != nil {
			return ctxOutcome(ctx)
		}
		if stop != nil {
			return outcome{status: RunLoop, err: stop}
		}
		for i, c := range calls {
			msgs = append(msgs, message{Role: "tool", ToolCallID: c.ID, Content: results[i]})
		}
	}
}

// stepUsage is one model call's accounting; tokens are estimated when the
// server reported none.
func stepUsage(rep reply, msgs []message, schema int, took time.Duration) Usage {
	u := Usage{ToolSchemaTokens: int64(schema), ModelMS: took.Milliseconds()}
	if rep.Usage != nil {
		u.PromptTokens, u.CompletionTokens, u.TotalTokens = rep.Usage.PromptTokens, rep.Usage.CompletionTokens, rep.Usage.TotalTokens
		if u.TotalTokens == 0 {
			u.TotalTokens = u.PromptTokens + u.CompletionTokens
		}
		return u
	}
	if rep.Content == "" && len(rep.ToolCalls) == 0 {
		return u // the call failed: nothing to count
	}
	out := len(rep.Content)
	for _, c := range rep.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	u.PromptTokens = int64(conversationTokens(msgs, schema))
	u.CompletionTokens = int64(estimateTokens(out))
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.Estimated = true
	return u
}

// assistantData is the payload of an assistant_message event.
func assistantData(rep reply, calls []toolCall, u Usage) map[string]any {
	cs := make([]map[string]any, 0, len(calls))
	for _, c := range calls {
		cs = append(cs, map[string]any{"id": c.ID, "name": c.Name, "arguments": c.Arguments})
	}
	return map[string]any{"content": rep.Content, "tool_calls": cs, "finish_reason": rep.FinishReason, "usage": u}
}
