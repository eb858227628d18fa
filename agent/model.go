package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
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
	redact   func(string) string
}

// retryFunc is told about each retry of a model call (for events).
type retryFunc func(attempt int, wait time.Duration, err error)

// newModel builds the client. The API key is given to openai-go only.
func newModel(p Provider, logger *slog.Logger, redact func(string) string) *model {
	p = p.withDefaults()
	opts := []option.RequestOption{
		option.WithBaseURL(p.BaseURL),
		option.WithAPIKey(p.APIKey),
		option.WithMaxRetries(0),
	}
	if p.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(p.HTTPClient))
	}
	return &model{client: openai.NewClient(opts...), provider: p, logger: logger, redact: redact}
}

// chat makes one model call, retrying transport errors with exponential
// backoff and jitter up to the provider's bound.
func (m *model) chat(ctx context.Context, req chatRequest, onRetry retryFunc) (reply, error) {
	var lastErr error
	attempts := 0
	for attempt := 0; ; attempt++ {
		r, err := m.once(ctx, req)
		attempts++
		if err == nil {
			return r, nil
		}
		lastErr = err
		if attempt >= m.provider.Retries || !retryable(ctx, err) {
			break
		}
		wait := backoff(attempt, m.provider.RetryBaseDelay, m.provider.RetryMaxDelay, err)
		m.logger.Warn("model call failed, retrying", "step", req.Step, "attempt", attempt+1,
			"wait", wait, "err", m.redact(err.Error()))
		if onRetry != nil {
			onRetry(attempt+1, wait, err)
		}
		if err := sleepCtx(ctx, wait); err != nil {
			return reply{}, err
		}
	}
	if ctx.Err() != nil {
		return reply{}, context.Cause(ctx)
	}
	var apiErr *openai.Error
	if errors.As(lastErr, &apiErr) && apiErr.Message != "" {
		return reply{}, fmt.Errorf("model call (%d attempts): %w: %s", attempts, lastErr, m.redact(apiErr.Message))
	}
	return reply{}, fmt.Errorf("model call (%d attempts): %w", attempts, m.redactErr(lastErr))
}

// redactErr hides secrets in err's message, keeping it for errors.Is/As.
func (m *model) redactErr(err error) error {
	if msg := m.redact(err.Error()); msg != err.Error() {
		return &redactedError{msg: msg, err: err}
	}
	return err
}

// redactedError is an error whose message had secrets removed.
type redactedError struct {
	msg string
	err error
}

// Error returns the redacted message.
func (e *redactedError) Error() string { return e.msg }

// Unwrap returns the original error.
func (e *redactedError) Unwrap() error { return e.err }

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
