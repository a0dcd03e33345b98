package subagents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Built-in subagent types.
const (
	GeneralPurpose = "general-purpose"
	Bash           = "bash"
)

// Defaults, as in DeerFlow.
const (
	DefaultMaxPerResponse = 3
	DefaultMaxPerRun      = 6
	// DefaultBuiltinTimeout bounds built-in subagents (seconds).
	DefaultBuiltinTimeout = 1800
	// DefaultCustomTimeout bounds custom subagents (seconds).
	DefaultCustomTimeout = 900
	// DefaultMaxTurns bounds model calls of a custom subagent.
	DefaultMaxTurns = 50
)

// ErrInvalidConfig reports a subagent configuration that cannot be served.
var ErrInvalidConfig = errors.New("invalid subagents configuration")

// Type is one subagent type.
type Type struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	SystemPrompt string `json:"system_prompt"`
	// Tools is an allow-list of the parent's tools; nil inherits them all.
	Tools           []string `json:"tools"`
	DisallowedTools []string `json:"disallowed_tools"`
	// Model is "inherit" (the parent's) or a model name.
	Model          string  `json:"model"`
	MaxTurns       int     `json:"max_turns"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
	// GraphID makes the type run a graph the server serves (a
	// LangGraph.js graph, an agent spec, a built-in) instead of an agent
	// loop: the prompt is its input's user message and its last AI
	// message the answer. SystemPrompt, Tools, DisallowedTools, Model and
	// MaxTurns do not apply to it.
	GraphID string `json:"graph_id"`
}

// Override adjusts one type (built-in or custom).
type Override struct {
	Model          string  `json:"model"`
	MaxTurns       int     `json:"max_turns"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
	TokenBudget    int     `json:"token_budget"`
}

// Config configures the task tool of one agent.
type Config struct {
	// MaxPerResponse caps task calls in one model response.
	MaxPerResponse int `json:"max_per_response"`
	// MaxPerRun caps task calls in one run of the parent.
	MaxPerRun int `json:"max_per_run"`
	// MaxDepth is how deep delegation may nest; 1 (the default) means a
	// subagent never gets the task tool itself.
	MaxDepth int `json:"max_depth"`
	// TimeoutSeconds bounds built-in types unless overridden.
	TimeoutSeconds float64 `json:"timeout_seconds"`
	// MaxTurns overrides built-in types' model-call budget.
	MaxTurns int `json:"max_turns"`
	// TokenBudget bounds the tokens of each subagent (0: no budget).
	TokenBudget int                 `json:"token_budget"`
	Types       []Type              `json:"types"`
	Overrides   map[string]Override `json:"overrides"`
}

// Graphs lists the graphs the config's types run (graph_id), for the
// server to check that it serves them.
func (c Config) Graphs() []string {
	var out []string
	for _, t := range c.Types {
		if t.GraphID != "" {
			out = append(out, t.GraphID)
		}
	}
	return out
}

// ParseConfig reads the "subagents" section of an agent spec; unknown
// fields are errors.
func ParseConfig(raw []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("%w: subagents: %v", ErrInvalidConfig, err)
	}
	if c.MaxPerResponse < 0 || c.MaxPerRun < 0 || c.MaxDepth < 0 || c.TokenBudget < 0 {
		return c, fmt.Errorf("%w: subagents: limits must not be negative", ErrInvalidConfig)
	}
	return c, nil
}

// resolved is a type with every limit decided (reference §2.2 precedence).
type resolved struct {
	Type
	timeoutSeconds float64
	maxTurns       int
	tokenBudget    int
}

// registry resolves subagent types.
type registry struct {
	types map[string]resolved
	names []string
}

// newRegistry builds the registry: built-ins (bash only with shell tools),
// then custom types; a custom type may not reuse a built-in name.
func newRegistry(cfg Config, shell bool) (*registry, error) {
	r := &registry{types: map[string]resolved{}}
	builtinTimeout := cfg.TimeoutSeconds
	if builtinTimeout <= 0 {
		builtinTimeout = DefaultBuiltinTimeout
	}
	add := func(t Type, builtin bool) error {
		if t.Name == "" || t.Description == "" {
			return fmt.Errorf("%w: a subagent type needs a name and a description", ErrInvalidConfig)
		}
		if _, dup := r.types[t.Name]; dup {
			return fmt.Errorf("%w: subagent type %q is defined twice (built-in names: %s, %s)", ErrInvalidConfig, t.Name, GeneralPurpose, Bash)
		}
		res := resolved{Type: t, timeoutSeconds: t.TimeoutSeconds, maxTurns: t.MaxTurns, tokenBudget: cfg.TokenBudget}
		if builtin {
			res.timeoutSeconds = builtinTimeout
			if cfg.MaxTurns > 0 {
				res.maxTurns = cfg.MaxTurns
			}
		}
		if res.timeoutSeconds <= 0 {
			res.timeoutSeconds = DefaultCustomTimeout
		}
		if res.maxTurns <= 0 {
			res.maxTurns = DefaultMaxTurns
		}
		if o, ok := cfg.Overrides[t.Name]; ok {
			if o.TimeoutSeconds > 0 {
				res.timeoutSeconds = o.TimeoutSeconds
			}
			if o.MaxTurns > 0 {
				res.maxTurns = o.MaxTurns
			}
			if o.Model != "" {
				res.Model = o.Model
			}
			if o.TokenBudget > 0 {
				res.tokenBudget = o.TokenBudget
			}
		}
		if res.Model == "" {
			res.Model = "inherit"
		}
		r.types[t.Name] = res
		r.names = append(r.names, t.Name)
		return nil
	}
	if err := add(Type{Name: GeneralPurpose, MaxTurns: 150,
		Description:  "A capable general-purpose agent for complex, multi-step work that benefits from its own context.",
		SystemPrompt: "You are a subagent handed one task by a lead agent. Work on it autonomously with your tools and finish with a complete, self-contained answer: the lead sees only your final message. You cannot delegate further."}, true); err != nil {
		return nil, err
	}
	if shell {
		if err := add(Type{Name: Bash, MaxTurns: 60, Tools: []string{"bash", "ls", "read_file", "write_file", "edit_file"},
			Description:  "Runs shell commands in the workspace for build, test and file chores.",
			SystemPrompt: "You are a shell subagent. Run the commands the task needs in the workspace, check their output, and report what you did and what happened."}, true); err != nil {
			return nil, err
		}
	}
	for _, t := range cfg.Types {
		if t.Name == GeneralPurpose || t.Name == Bash {
			return nil, fmt.Errorf("%w: %q is a built-in subagent type; override it under overrides instead", ErrInvalidConfig, t.Name)
		}
		if t.GraphID != "" && (t.SystemPrompt != "" || t.Tools != nil || t.DisallowedTools != nil || t.Model != "" || t.MaxTurns != 0) {
			return nil, fmt.Errorf("%w: subagent type %q runs graph %q: system_prompt, tools, disallowed_tools, model and max_turns do not apply to it", ErrInvalidConfig, t.Name, t.GraphID)
		}
		if err := add(t, false); err != nil {
			return nil, err
		}
	}
	for name := range cfg.Overrides {
		if _, ok := r.types[name]; !ok && name != Bash {
			return nil, fmt.Errorf("%w: overrides names unknown subagent type %q", ErrInvalidConfig, name)
		}
	}
	return r, nil
}

func (r *registry) get(name string) (resolved, bool) {
	t, ok := r.types[name]
	return t, ok
}

func (r *registry) available() string {
	names := append([]string(nil), r.names...)
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// childTools picks a subagent's tools from the parent's: the allow-list (or
// all), minus the disallowed ones, and never "task" unless depth allows.
func childTools(t resolved, parent []string, allowTask bool) []string {
	var out []string
	for _, name := range parent {
		if t.Tools != nil && !slices.Contains(t.Tools, name) {
			continue
		}
		if slices.Contains(t.DisallowedTools, name) || (name == ToolName && !allowTask) {
			continue
		}
		out = append(out, name)
	}
	return out
}
