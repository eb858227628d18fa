package agent

import "time"

// Config tunes the loop. Zero values mean the defaults below.
type Config struct {
	// MaxSteps is the number of model calls offered tools; after it, one
	// last call without tools asks for a conclusion (status max_steps).
	MaxSteps int
	// MaxRepeats is how many times the same call (name + canonical
	// arguments) may be made in a run; the call that reaches it is not run
	// and the model is told so, and a further repeat stops the run (loop).
	MaxRepeats int
	// TokenBudget caps the run's total tokens (as reported by the server,
	// estimated when it reports none); 0 means unlimited.
	TokenBudget int64
	// WallBudget caps the run's wall-clock time, approval waits included;
	// 0 means unlimited.
	WallBudget time.Duration
	// ContextBudget is the model's context size in tokens (estimated as
	// characters/4); when a request nears it (ContextHighWater of it), the
	// oldest tool results are shortened first. 0 disables shortening.
	ContextBudget int
	// ContextHighWater is the fraction of ContextBudget that triggers
	// shortening; 0 means 0.9.
	ContextHighWater float64
	// ShortenedChars is the size a shortened tool result keeps (head and
	// tail); 0 means 400.
	ShortenedChars int
	// Stream uses server-sent events for model calls.
	Stream bool
	// MaxParallel bounds the tool calls of one turn running at once;
	// 0 means 8.
	MaxParallel int
	// MaxCallsPerTurn bounds the calls run for one model answer; the rest
	// are answered with a refusal. 0 means 16.
	MaxCallsPerTurn int
	// SystemPrompt is appended to the tools' system prompt.
	SystemPrompt string
	// Temperature, when non-nil, is sent with every model call.
	Temperature *float64
	// ConcludePrompt is the user message of the forced final call.
	ConcludePrompt string
}

// Loop defaults.
const (
	DefaultMaxSteps        = 20
	DefaultMaxRepeats      = 3
	DefaultHighWater       = 0.9
	DefaultShortenedChars  = 400
	DefaultMaxParallel     = 8
	DefaultMaxCallsPerTurn = 16
	DefaultConcludePrompt  = "The step limit is reached: do not call any tool. " +
		"Give your final answer now, from what was gathered so far, and say what is still unknown."
)

// withDefaults fills zero values.
func (c Config) withDefaults() Config {
	if c.MaxSteps <= 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.MaxRepeats <= 0 {
		c.MaxRepeats = DefaultMaxRepeats
	}
	if c.ContextHighWater <= 0 || c.ContextHighWater > 1 {
		c.ContextHighWater = DefaultHighWater
	}
	if c.ShortenedChars <= 0 {
		c.ShortenedChars = DefaultShortenedChars
	}
	if c.MaxParallel <= 0 {
		c.MaxParallel = DefaultMaxParallel
	}
	if c.MaxCallsPerTurn <= 0 {
		c.MaxCallsPerTurn = DefaultMaxCallsPerTurn
	}
	if c.ConcludePrompt == "" {
		c.ConcludePrompt = DefaultConcludePrompt
	}
	return c
}
