package llm

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Defaults applied by NewOpenAI to zero Config fields.
const (
	DefaultBaseURL        = "https://api.openai.com/v1"
	DefaultModel          = "gpt-4o-mini"
	DefaultTimeout        = 120 * time.Second
	DefaultMaxRetries     = 3
	DefaultRetryBaseDelay = 500 * time.Millisecond
	DefaultRetryMaxDelay  = 8 * time.Second
	DefaultMaxRetryAfter  = 60 * time.Second
)

// Config configures the OpenAI-compatible model. Zero fields take the
// defaults above.
type Config struct {
	// APIKey is sent as a bearer token when not empty.
	APIKey string
	// BaseURL is the API root, e.g. "https://api.openai.com/v1" or
	// "http://127.0.0.1:11434/v1".
	BaseURL string
	// Model is the default model name; Request.Model overrides it.
	Model string
	// Timeout bounds each HTTP attempt, from sending the request to the last
	// streamed byte. Negative means no limit (only the caller's context).
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is retried; negative
	// disables retries.
	MaxRetries int
	// HTTPClient sends the requests; nil means a client with a pooled
	// transport. Its own Timeout should stay 0: Timeout above covers it.
	HTTPClient *http.Client

	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff
	// (base·2^attempt, capped, minus up to 25% jitter).
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration
	// MaxRetryAfter caps a server's Retry-After (or retry-after-ms) hint.
	MaxRetryAfter time.Duration
}

// Configured reports whether a provider is configured: an API key or a base
// URL is set.
func (c Config) Configured() bool { return c.APIKey != "" || c.BaseURL != "" }

// Validate checks the fields that can be wrong; call it once at start.
func (c Config) Validate() error {
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil {
			return fmt.Errorf("llm: base url: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("llm: base url %q: want an absolute http(s) url", c.BaseURL)
		}
	}
	if c.RetryBaseDelay < 0 || c.RetryMaxDelay < 0 || c.MaxRetryAfter < 0 {
		return fmt.Errorf("llm: retry delays must not be negative")
	}
	return nil
}

// withDefaults returns c with the zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.Model == "" {
		c.Model = DefaultModel
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.RetryBaseDelay == 0 {
		c.RetryBaseDelay = DefaultRetryBaseDelay
	}
	if c.RetryMaxDelay == 0 {
		c.RetryMaxDelay = DefaultRetryMaxDelay
	}
	if c.MaxRetryAfter == 0 {
		c.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if c.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 64 // many runs talk to one provider at once
		c.HTTPClient = &http.Client{Transport: t}
	}
	return c
}

// FromEnv fills APIKey and BaseURL from OPENAI_API_KEY and OPENAI_BASE_URL,
// as the official SDKs do; fields already set in overrides win, and blank
// variables count as unset. A nil getenv means os.Getenv.
func FromEnv(getenv func(string) string, overrides Config) Config {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := overrides
	if c.APIKey == "" {
		c.APIKey = strings.TrimSpace(getenv("OPENAI_API_KEY"))
	}
	if c.BaseURL == "" {
		c.BaseURL = strings.TrimSpace(getenv("OPENAI_BASE_URL"))
	}
	return c
}

// New returns the model for cfg: an OpenAI-compatible client when an API key
// or base URL is set, else Offline, logging one warning. Call it once at
// start; log may be nil.
func New(cfg Config, log *slog.Logger) Model {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Configured() {
		return NewOpenAI(cfg, log)
	}
	log.Warn("no model is configured; answering with the offline model",
		"hint", "set OPENAI_API_KEY or OPENAI_BASE_URL; cmd/scriptedllm is a demo model that needs no key (docs/supervisor.md)")
	return Offline{}
}
