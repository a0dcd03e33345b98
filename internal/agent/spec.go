package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"agentserver/internal/configfile"
	"agentserver/internal/mcptools"
)

// ErrInvalidSpec reports an agent spec that cannot be served; the message
// names the file, the field and the reason.
var ErrInvalidSpec = errors.New("invalid agent spec")

// Spec is an agent spec file (YAML or JSON).
type Spec struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Model        Model  `json:"model"`
	SystemPrompt string `json:"system_prompt"`
	// Tools names built-in tools (ls, read_file, write_file, edit_file, glob,
	// grep, write_todos, bash).
	Tools []string `json:"tools"`
	// MCPServers are Model Context Protocol servers whose tools the agent
	// may call (named "<server>_<tool>").
	MCPServers []mcptools.ServerConfig `json:"mcp_servers"`
	// MaxTurns bounds model calls per run; the last allowed call gets no
	// tools, so the agent answers with what it has.
	MaxTurns   int            `json:"max_turns"`
	Middleware MiddlewareSpec `json:"middleware"`
	Schemas    Schemas        `json:"schemas"`
	// AsyncSubagents makes the agent a supervisor of background subagents.
	AsyncSubagents *[]AsyncSubagent `json:"async_subagents"`
	// AsyncSystemPrompt replaces the supervisor's prompt section; "" removes it.
	AsyncSystemPrompt *string `json:"async_system_prompt"`
	// NotifyOnCompletion queues a supervisor run when an async task ends.
	NotifyOnCompletion bool `json:"notify_on_completion"`
	// Subagents enables the synchronous task tool; its content is read by
	// the subagents package (limits, custom types, overrides).
	Subagents json.RawMessage `json:"subagents"`
	// CancelTasksOnThreadDelete cancels a supervisor thread's live async
	// tasks when the thread is deleted (they are independent otherwise).
	CancelTasksOnThreadDelete bool `json:"cancel_tasks_on_thread_delete"`
}

// AsyncSubagent is one async subagent of a supervisor: a graph served by
// this server (no url), by the Agent Protocol server at url, or (protocol
// a2a) the A2A agent whose endpoint is url.
type AsyncSubagent struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	GraphID     string            `json:"graph_id"`
	URL         string            `json:"url"`
	Headers     map[string]string `json:"headers"`
	Protocol    string            `json:"protocol"`
	// ForwardCredentials sends the credentials of the user a run acts
	// for (their Authorization header) with every request to url, in
	// place of a configured one: the remote server then acts as that user.
	ForwardCredentials bool `json:"forward_credentials"`
}

// Model configures the chat model of an agent.
type Model struct {
	// Name is the model id sent to the provider ("gpt-4o-mini", ...).
	Name string `json:"name"`
	// BaseURL overrides OPENAI_BASE_URL for this agent.
	BaseURL string `json:"base_url"`
	// APIKeyEnv names the environment variable holding the key (default
	// OPENAI_API_KEY).
	APIKeyEnv      string   `json:"api_key_env"`
	Temperature    *float64 `json:"temperature"`
	MaxTokens      int      `json:"max_tokens"`
	TimeoutSeconds float64  `json:"timeout_seconds"`
	MaxRetries     *int     `json:"max_retries"`
}

// UnmarshalJSON accepts a bare model name as well as the object form.
func (m *Model) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*m = Model{Name: name}
		return nil
	}
	type plain Model
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*m = Model(p)
	return nil
}

// MiddlewareSpec configures the built-in middlewares.
type MiddlewareSpec struct {
	Compaction *Compaction `json:"compaction"`
	// InterruptOn pauses before the named tools run until a human approves,
	// edits or rejects the call: tool name -> true, or {"allowed_decisions":
	// ["approve", "edit", "reject"]}.
	InterruptOn map[string]any `json:"interrupt_on"`
}

// Compaction summarises old messages when the conversation grows too long.
type Compaction struct {
	// MaxTokens is the estimated size of messages that triggers compaction.
	MaxTokens int `json:"max_tokens"`
	// KeepMessages is how many recent messages are kept verbatim.
	KeepMessages int `json:"keep_messages"`
	// Prompt replaces the default summarisation instruction.
	Prompt string `json:"prompt"`
}

// Schemas are optional JSON Schemas served by /assistants/{id}/schemas.
type Schemas struct {
	Input   map[string]any `json:"input"`
	Output  map[string]any `json:"output"`
	State   map[string]any `json:"state"`
	Config  map[string]any `json:"config"`
	Context map[string]any `json:"context"`
}

// knownTools are the tool names a spec may list.
var knownTools = map[string]bool{"ls": true, "read_file": true, "write_file": true, "edit_file": true, "glob": true, "grep": true, "write_todos": true, "bash": true}

// LoadSpec reads and validates a spec file. An empty file (or one of
// comments only) is refused.
func LoadSpec(path string) (*Spec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidSpec, path, err)
	}
	spec, err := parseSpec(path, raw, strings.ToLower(filepath.Ext(path)) == ".json")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	return spec, nil
}

// ParseSpec decodes a spec (YAML is a superset of JSON, so YAML parsing
// serves both unless asJSON insists) and validates it.
func ParseSpec(raw []byte, asJSON bool) (*Spec, error) {
	return parseSpec("", raw, asJSON)
}

// parseSpec is ParseSpec for the file named file ("": none), which its
// errors name.
func parseSpec(file string, raw []byte, asJSON bool) (*Spec, error) {
	var s Spec
	if err := configfile.Decode(file, raw, asJSON, &s, configfile.Options{}); err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		if file != "" {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return nil, err
	}
	return &s, nil
}

// Validate checks a spec's fields.
func (s *Spec) Validate() error {
	var errs []error
	field := func(name, reason string) { errs = append(errs, fmt.Errorf("field %q: %s", name, reason)) }
	if s.MaxTurns < 0 {
		field("max_turns", "must not be negative")
	}
	seen := map[string]bool{}
	for i, t := range s.Tools {
		if !knownTools[t] {
			field(fmt.Sprintf("tools[%d]", i), fmt.Sprintf("unknown tool %q", t))
		}
		if seen[t] {
			field(fmt.Sprintf("tools[%d]", i), fmt.Sprintf("tool %q listed twice", t))
		}
		seen[t] = true
	}
	if err := mcptools.ValidateAll(s.MCPServers); err != nil {
		errs = append(errs, err)
	}
	if s.Model.Temperature != nil && (*s.Model.Temperature < 0 || *s.Model.Temperature > 2) {
		field("model.temperature", "must be between 0 and 2")
	}
	if s.Model.MaxTokens < 0 || s.Model.TimeoutSeconds < 0 {
		field("model", "max_tokens and timeout_seconds must not be negative")
	}
	if c := s.Middleware.Compaction; c != nil {
		if c.MaxTokens <= 0 {
			field("middleware.compaction.max_tokens", "must be positive")
		}
		if c.KeepMessages < 0 {
			field("middleware.compaction.keep_messages", "must not be negative")
		}
	}
	for tool, v := range s.Middleware.InterruptOn {
		if _, err := parseInterruptRule(v); err != nil {
			field("middleware.interrupt_on."+tool, err.Error())
		}
	}
	return errors.Join(errs...)
}
