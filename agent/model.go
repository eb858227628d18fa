package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

// chatRequest is one model call.
type chatRequest struct {
	Model    string
	Messages []message
	Tools    []openai.ChatCompletionToolUnionParam // nil: no tools offered
	Stream   bool
	Temp     *float64
	Step     int
}

// model calls an OpenAI-compatible chat completions endpoint through
// openai-go, with the SDK's own retries off and bounded retries here.
type model struct {
	client   openai.Client
	provider Provider
	logger   *slog.Logger
}

// retryFunc is told about each retry of a model call (for events).
type retryFunc func(attempt int, wait time.Duration, err error)

// newModel builds the client. The API key is given to openai-go only: it
// is never compared with anything, so nothing the loop shows (events, run
// errors, tool calls) can tell a guesser whether a guess was the key.
func newModel(p Provider, logger *slog.Logger) *model {
	p = p.withDefaults()
	opts := []option.RequestOption{
		option.WithBaseURL(p.BaseURL),
		option.WithAPIKey(p.APIKey),
		option.WithMaxRetries(0),
	}
	if p.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(p.HTTPClient))
	}
	return &model{client: openai.NewClient(opts...), provider: p, logger: logger}
}

// chat makes one model call, retrying transport errors with exponential
// backoff and jitter up to the provider's bound. Its errors are
// modelErrors: what they say comes from modelFailure, never from the
// server's free text.
func (m *model) chat(ctx context.Context, req chatRequest, onRetry retryFunc) (reply, error) {
	var lastErr error
	attempts := 0
	for attempt := 0; ; attempt++ {
		r, err := m.once(ctx, req)
		attempts++
		if err == nil {
			return r, nil
		}
		lastErr = &modelError{err: err}
		m.logDetail(req.Step, attempt+1, err)
		if attempt >= m.provider.Retries || !retryable(ctx, err) {
			break
		}
		wait := backoff(attempt, m.provider.RetryBaseDelay, m.provider.RetryMaxDelay, err)
		m.logger.Warn("model call failed, retrying", "step", req.Step, "attempt", attempt+1, "wait", wait, "err", lastErr)
		if onRetry != nil {
			onRetry(attempt+1, wait, lastErr)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return reply{}, err
		}
	}
	if ctx.Err() != nil {
		return reply{}, context.Cause(ctx)
	}
	return reply{}, fmt.Errorf("model call (%d attempts): %w", attempts, lastErr)
}

// logDetail writes what the model server said about a failed call (its
// error message or stream error) to the operator's log only: that text is
// the server's, and may quote the request or the credentials it refused.
func (m *model) logDetail(step, attempt int, err error) {
	var apiErr *openai.Error
	var streamErr *ssestream.StreamError
	switch {
	case errors.As(err, &apiErr) && apiErr.Message != "":
		m.logger.Warn("model server error", "step", step, "attempt", attempt, "status", apiErr.StatusCode, "message", apiErr.Message)
	case errors.As(err, &streamErr):
		m.logger.Warn("model server stream error", "step", step, "attempt", attempt, "message", streamErr.Message)
	}
}

// modelError is a failed model call as runs show it: the HTTP status and
// the error type and code for a server's answer, the operation and cause
// without the URL for a transport error. errors.Is/As see the original.
type modelError struct {
	err error
}

// Error describes the failure without the server's free text or the URL.
func (e *modelError) Error() string { return modelFailure(e.err) }

// Unwrap returns the original error.
func (e *modelError) Unwrap() error { return e.err }

// modelFailure describes err for events and run errors.
func modelFailure(err error) string {
	var apiErr *openai.Error
	var streamErr *ssestream.StreamError
	var urlErr *url.Error
	switch {
	case errors.As(err, &apiErr):
		s := apiErr.Error()
		for _, part := range []string{apiErr.Type, apiErr.Code} {
			if part != "" {
				s += " (" + part + ")"
			}
		}
		return s
	case errors.As(err, &streamErr):
		return "the model server sent an error in the stream"
	case errors.As(err, &urlErr):
		return urlErr.Op + " to the model server: " + urlErr.Err.Error()
	}
	return err.Error()
}

// once makes a single attempt bounded by the per-request timeout.
func (m *model) once(ctx context.Context, req chatRequest) (reply, error) {
	ctx, cancel := context.WithTimeout(ctx, m.provider.Timeout)
	defer cancel()
	params := openai.ChatCompletionNewParams{
		Model:    req.Model,
		Messages: toParams(req.Messages),
	}
	if len(req.Tools) > 0 {
		params.Tools = req.Tools
	}
	if req.Temp != nil {
		params.Temperature = openai.Float(*req.Temp)
	}
	if !req.Stream {
		res, err := m.client.Chat.Completions.New(ctx, params)
		if err != nil {
			return reply{}, err
		}
		r, err := parseCompletion([]byte(res.RawJSON()))
		if err != nil {
			return reply{}, err
		}
		return r, nil
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	stream := m.client.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	acc := newAccumulator()
	chunks := 0
	for stream.Next() {
		chunks++
		if err := acc.add([]byte(stream.Current().RawJSON())); err != nil {
			return reply{}, err
		}
	}
	if err := stream.Err(); err != nil {
		return reply{}, err
	}
	if chunks == 0 {
		return reply{}, errors.New("empty stream")
	}
	return acc.reply(), nil
}
