package agent

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"agentserver/internal/llm"
)

// NewModelFactory builds chat models from spec settings and the environment
// (OPENAI_API_KEY, OPENAI_BASE_URL, or the spec's api_key_env), keeping one
// client per distinct configuration. With neither a key nor a base URL the
// model is the offline one, which says so in its replies.
func NewModelFactory(getenv func(string) string, log *slog.Logger) ModelFactory {
	var mu sync.Mutex
	cache := map[llm.Config]llm.Model{}
	return func(m Model, override string) (llm.Model, error) {
		cfg := llm.Config{Model: m.Name, BaseURL: m.BaseURL}
		if m.APIKeyEnv != "" {
			cfg.APIKey = getenv(m.APIKeyEnv)
		}
		if override != "" {
			cfg.Model = override
		}
		if m.TimeoutSeconds > 0 {
			cfg.Timeout = time.Duration(m.TimeoutSeconds * float64(time.Second))
		}
		if m.MaxRetries != nil {
			cfg.MaxRetries = *m.MaxRetries
			if cfg.MaxRetries == 0 {
				cfg.MaxRetries = -1 // zero in a spec means no retries
			}
		}
		cfg = llm.FromEnv(getenv, cfg)
		if err := cfg.Validate(); err != nil {
			return nil, fmt.Errorf("model %q: %w", cfg.Model, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if model, ok := cache[cfg]; ok {
			return model, nil
		}
		model := llm.New(cfg, log)
		cache[cfg] = model
		return model, nil
	}
}
