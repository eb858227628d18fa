package agent

import (
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Environment variables read by ResolveProvider.
const (
	EnvBaseURL = "OPENAI_BASE_URL"
	EnvAPIKey  = "OPENAI_API_KEY"
	EnvModel   = "AIRLOCK_MODEL"
)

// DefaultOpenAIBaseURL is used when an API key is configured without a
// base URL.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// Provider says which OpenAI-compatible server to talk to and how. It works
// with OpenAI, Ollama, vLLM and llama.cpp servers alike. The API key is
// sent to the model server only: Airlock never puts it in a sandbox, a log
// or an event (String and LogValue hide it), and never compares it with
// anything, so no output can confirm a guess of it. What the model server
// says about a failed call goes to the operator's log, not to events.
type Provider struct {
	BaseURL string
	APIKey  string
	Model   string
	// Timeout bounds one model request (a whole stream included);
	// 0 means DefaultRequestTimeout.
	Timeout time.Duration
	// Retries is how many times a transport error (connection error,
	// 408, 409, 429, 5xx) is retried; 0 means DefaultRetries, negative
	// disables retries.
	Retries int
	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff;
	// zero means the defaults.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// HTTPClient is optional (tests, proxies).
	HTTPClient *http.Client
}

// Provider defaults.
const (
	DefaultRequestTimeout = 2 * time.Minute
	DefaultRetries        = 4
	DefaultRetryBaseDelay = 500 * time.Millisecond
	DefaultRetryMaxDelay  = 20 * time.Second
)

// ResolveProvider fills the fields flags left empty from the environment:
// OPENAI_BASE_URL, OPENAI_API_KEY and AIRLOCK_MODEL (flags win). getenv is
// usually os.Getenv. An API key without a base URL means OpenAI itself.
func ResolveProvider(flags Provider, getenv func(string) string) Provider {
	p := flags
	if p.BaseURL == "" {
		p.BaseURL = strings.TrimSpace(getenv(EnvBaseURL))
	}
	if p.APIKey == "" {
		p.APIKey = strings.TrimSpace(getenv(EnvAPIKey))
	}
	if p.Model == "" {
		p.Model = strings.TrimSpace(getenv(EnvModel))
	}
	if p.BaseURL == "" && p.APIKey != "" {
		p.BaseURL = DefaultOpenAIBaseURL
	}
	return p
}

// Configured reports whether a model and a base URL are set.
func (p Provider) Configured() bool { return p.Model != "" && p.BaseURL != "" }

// withDefaults fills zero values.
func (p Provider) withDefaults() Provider {
	if p.Timeout <= 0 {
		p.Timeout = DefaultRequestTimeout
	}
	if p.Retries == 0 {
		p.Retries = DefaultRetries
	} else if p.Retries < 0 {
		p.Retries = 0
	}
	if p.RetryBaseDelay <= 0 {
		p.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if p.RetryMaxDelay <= 0 {
		p.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if p.RetryMaxDelay < p.RetryBaseDelay {
		p.RetryMaxDelay = p.RetryBaseDelay
	}
	return p
}

// String describes the provider without its API key.
func (p Provider) String() string {
	key := "none"
	if p.APIKey != "" {
		key = "set"
	}
	return "provider{base_url=" + p.BaseURL + " model=" + p.Model + " api_key=" + key + "}"
}

// LogValue logs the provider without its API key.
func (p Provider) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", p.BaseURL),
		slog.String("model", p.Model),
		slog.Bool("api_key_set", p.APIKey != ""),
	)
}
