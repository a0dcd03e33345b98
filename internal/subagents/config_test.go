package subagents

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func mustRegistry(t *testing.T, cfg Config, shell bool) *registry {
	t.Helper()
	r, err := newRegistry(cfg, shell)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func mustType(t *testing.T, r *registry, name string) resolved {
	t.Helper()
	typ, ok := r.get(name)
	if !ok {
		t.Fatalf("type %q missing; available: %s", name, r.available())
	}
	return typ
}

type limits struct {
	timeout float64
	turns   int
	budget  int
	model   string
}

func limitsOf(r resolved) limits {
	return limits{r.timeoutSeconds, r.maxTurns, r.tokenBudget, r.Model}
}

func TestRegistryDefaults(t *testing.T) {
	r := mustRegistry(t, Config{}, false)
	if got := r.available(); got != GeneralPurpose {
		t.Fatalf("available without shell = %q, want only %s", got, GeneralPurpose)
	}
	if _, ok := r.get(Bash); ok {
		t.Fatal("bash must not be offered without shell tools")
	}
	gp := mustType(t, r, GeneralPurpose)
	if want := (limits{DefaultBuiltinTimeout, 150, 0, "inherit"}); limitsOf(gp) != want {
		t.Fatalf("general-purpose = %+v, want %+v", limitsOf(gp), want)
	}
	if gp.SystemPrompt == "" || gp.Description == "" || gp.Tools != nil {
		t.Fatalf("general-purpose must inherit every tool and have a prompt: %+v", gp.Type)
	}

	r = mustRegistry(t, Config{}, true)
	bash := mustType(t, r, Bash)
	if want := (limits{DefaultBuiltinTimeout, 60, 0, "inherit"}); limitsOf(bash) != want {
		t.Fatalf("bash = %+v, want %+v", limitsOf(bash), want)
	}
	if !slices.Contains(bash.Tools, "bash") || slices.Contains(bash.Tools, ToolName) {
		t.Fatalf("bash tools = %v", bash.Tools)
	}
	if got := r.available(); got != "bash, general-purpose" {
		t.Fatalf("available with shell = %q", got)
	}
}

// TestRegistryPrecedence pins reference §2.2: a per-type override wins; the
// global timeout and max_turns apply to built-ins only; custom types keep
// their own values or the custom defaults; the token budget is global unless
// overridden, for built-in and custom types alike.
func TestRegistryPrecedence(t *testing.T) {
	cfg := Config{
		TimeoutSeconds: 600,
		MaxTurns:       12,
		TokenBudget:    5000,
		Types: []Type{
			{Name: "analyst", Description: "Analyses.", SystemPrompt: "You analyse."},
			{Name: "writer", Description: "Writes.", SystemPrompt: "You write.", MaxTurns: 4, TimeoutSeconds: 30, Model: "small-model"},
			{Name: "tuned", Description: "Tuned.", SystemPrompt: "You are tuned.", MaxTurns: 9, TimeoutSeconds: 45},
		},
		Overrides: map[string]Override{
			GeneralPurpose: {TimeoutSeconds: 120, Model: "big-model"},
			"tuned":        {TimeoutSeconds: 2, MaxTurns: 3, Model: "other-model", TokenBudget: 77},
		},
	}
	r := mustRegistry(t, cfg, true)
	cases := map[string]limits{
		// Built-in: global max_turns, override timeout and model, global budget.
		GeneralPurpose: {120, 12, 5000, "big-model"},
		// Built-in without override: the global timeout and max_turns.
		Bash: {600, 12, 5000, "inherit"},
		// Custom without values: the custom defaults, not the globals.
		"analyst": {DefaultCustomTimeout, DefaultMaxTurns, 5000, "inherit"},
		// Custom with its own values keeps them against the globals.
		"writer": {30, 4, 5000, "small-model"},
		// Custom with an override: the override wins over its own values.
		"tuned": {2, 3, 77, "other-model"},
	}
	for name, want := range cases {
		if got := limitsOf(mustType(t, r, name)); got != want {
			t.Errorf("%s = %+v, want %+v", name, got, want)
		}
	}
	// Registry order: built-ins first, then custom types as configured.
	if want := []string{GeneralPurpose, Bash, "analyst", "writer", "tuned"}; !slices.Equal(r.names, want) {
		t.Errorf("names = %v, want %v", r.names, want)
	}
	if got := r.available(); got != "analyst, bash, general-purpose, tuned, writer" {
		t.Errorf("available = %q", got)
	}
	// The config itself is not modified by resolution.
	if cfg.Types[0].TimeoutSeconds != 0 || cfg.Types[0].MaxTurns != 0 {
		t.Errorf("resolution wrote into the config: %+v", cfg.Types[0])
	}
}

func TestRegistryErrors(t *testing.T) {
	custom := func(name string) Type { return Type{Name: name, Description: "d", SystemPrompt: "p"} }
	cases := map[string]struct {
		cfg   Config
		shell bool
		want  string
	}{
		"custom reuses general-purpose": {Config{Types: []Type{custom(GeneralPurpose)}}, false, "built-in"},
		"custom reuses bash with shell": {Config{Types: []Type{custom(Bash)}}, true, "built-in"},
		// Reserved even when the server offers no shell.
		"custom reuses bash without shell": {Config{Types: []Type{custom(Bash)}}, false, "built-in"},
		"duplicate custom":                 {Config{Types: []Type{custom("x"), custom("x")}}, false, "defined twice"},
		"no name":                          {Config{Types: []Type{{Description: "d"}}}, false, "name and a description"},
		"no description":                   {Config{Types: []Type{{Name: "x"}}}, false, "name and a description"},
		"override of unknown type":         {Config{Overrides: map[string]Override{"ghost": {MaxTurns: 1}}}, false, "unknown subagent type"},
		"graph type with a prompt":         {Config{Types: []Type{{Name: "g", Description: "d", GraphID: "js_chat", SystemPrompt: "p"}}}, false, `runs graph "js_chat": system_prompt, tools`},
		"graph type with tools":            {Config{Types: []Type{{Name: "g", Description: "d", GraphID: "js_chat", Tools: []string{}}}}, false, "do not apply"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := newRegistry(c.cfg, c.shell)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error = %v, want ErrInvalidConfig mentioning %q", err, c.want)
			}
		})
	}
	// Overriding bash is not an error on a server without shell tools: the
	// same spec serves both kinds of server.
	if _, err := newRegistry(Config{Overrides: map[string]Override{Bash: {MaxTurns: 5}}}, false); err != nil {
		t.Fatalf("bash override without shell: %v", err)
	}
}

func TestParseConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"max_per_response": 2, "max_per_run": 5, "timeout_seconds": 60, "token_budget": 1000,
		"types": [{"name": "analyst", "description": "Analyses.", "system_prompt": "p", "tools": ["read_file"], "disallowed_tools": ["bash"], "max_turns": 3, "timeout_seconds": 1.5}],
		"overrides": {"general-purpose": {"max_turns": 7, "token_budget": 10}}}`))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Types[0]
	if cfg.MaxPerResponse != 2 || cfg.MaxPerRun != 5 || cfg.TokenBudget != 1000 || a.TimeoutSeconds != 1.5 || !slices.Equal(a.Tools, []string{"read_file"}) || cfg.Overrides[GeneralPurpose].MaxTurns != 7 {
		t.Fatalf("parsed = %+v", cfg)
	}
	if cfg, err := ParseConfig([]byte(`{}`)); err != nil || cfg.MaxPerResponse != 0 {
		t.Fatalf("empty section: %+v %v", cfg, err)
	}
	for name, raw := range map[string]string{
		"unknown field":         `{"max_parallel": 3}`,
		"unknown type field":    `{"types": [{"name": "a", "description": "d", "colour": "blue"}]}`,
		"unknown override":      `{"overrides": {"general-purpose": {"tools": ["ls"]}}}`,
		"negative per response": `{"max_per_response": -1}`,
		"negative per run":      `{"max_per_run": -1}`,
		"negative budget":       `{"token_budget": -5}`,
		"wrong type":            `{"max_per_run": "six"}`,
	} {
		if _, err := ParseConfig([]byte(raw)); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: error = %v, want ErrInvalidConfig", name, err)
		}
	}
}

func TestChildTools(t *testing.T) {
	parent := []string{"ls", "read_file", "write_file", "bash", ToolName}
	cases := []struct {
		name      string
		typ       Type
		allowTask bool
		want      []string
	}{
		{"inherit all but task", Type{}, false, []string{"ls", "read_file", "write_file", "bash"}},
		{"allow-list", Type{Tools: []string{"read_file", "ls"}}, false, []string{"ls", "read_file"}},
		{"allow-list cannot grant task at depth 1", Type{Tools: []string{"read_file", ToolName}}, false, []string{"read_file"}},
		{"allow-list cannot add tools the parent lacks", Type{Tools: []string{"grep", "ls"}}, false, []string{"ls"}},
		{"empty allow-list means none", Type{Tools: []string{}}, false, nil},
		{"disallowed", Type{DisallowedTools: []string{"write_file", "bash"}}, false, []string{"ls", "read_file"}},
		{"disallowed wins over the allow-list", Type{Tools: []string{"ls", "bash"}, DisallowedTools: []string{"bash"}}, false, []string{"ls"}},
		{"task only when depth allows", Type{}, true, []string{"ls", "read_file", "write_file", "bash", ToolName}},
		{"disallowed task even when depth allows", Type{DisallowedTools: []string{ToolName}}, true, []string{"ls", "read_file", "write_file", "bash"}},
	}
	for _, c := range cases {
		got := childTools(resolved{Type: c.typ}, parent, c.allowTask)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: tools = %v, want %v", c.name, got, c.want)
		}
	}
}
