package agent

import (
	"testing"

	"agentserver/internal/graph"
)

func TestFillUser(t *testing.T) {
	alice := &graph.Runtime{Config: map[string]any{"configurable": map[string]any{"langgraph_auth_user": map[string]any{
		"identity": "alice", "display_name": "Alice", "permissions": []any{"threads:write"}, "org": "acme",
	}}}}
	operator := &graph.Runtime{Config: map[string]any{"configurable": map[string]any{}}}
	for _, tc := range []struct {
		name, prompt string
		rt           *graph.Runtime
		want         string
	}{
		{"fields", "You help {user.display_name} ({user.identity}) of {user.org}.", alice, "You help Alice (alice) of acme."},
		{"non-string as JSON", "May: {user.permissions}", alice, `May: ["threads:write"]`},
		{"missing field", "Team {user.team}.", alice, "Team ."},
		{"no per-user caller", "You help {user.identity}.", operator, "You help ."},
		{"no placeholder", "You help {users}.", alice, "You help {users}."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fillUser(tc.prompt, tc.rt); got != tc.want {
				t.Fatalf("fillUser(%q) = %q, want %q", tc.prompt, got, tc.want)
			}
		})
	}
}
