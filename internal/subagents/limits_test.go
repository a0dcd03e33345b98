package subagents

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"agentserver/internal/agent"
	"agentserver/internal/channels"
	"agentserver/internal/graph"
	"agentserver/internal/llm"
)

func newDelegation(t *testing.T, cfg Config) *Delegation {
	t.Helper()
	d, err := New(cfg, &agent.Spec{Name: "lead", Model: agent.Model{Name: "m"}}, Env{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// taskAnswer is the tool message of a task call: a delegation that ran, or
// one refused by a cap.
func taskAnswer(id string, refused bool) map[string]any {
	m := map[string]any{"type": "tool", "name": ToolName, "tool_call_id": id, "content": "Task Succeeded. Result: x",
		"additional_kwargs": map[string]any{"subagent_status": "completed"}}
	if refused {
		m["content"] = "Task not run: a cap"
		m["additional_kwargs"] = map[string]any{"subagent_status": "failed", "subagent_stop_reason": "limit_capped"}
	}
	return m
}

// capped runs BeforeTools on a step calling names (tool names; ids are
// c1, c2, …) after history, and returns the ids it refused.
func capped(t *testing.T, d *Delegation, history []any, names ...string) []string {
	t.Helper()
	b := &agent.ToolBatch{State: graph.State{channels.MessagesChannel: history}, Answered: map[string]llm.Message{}}
	for i, n := range names {
		b.Calls = append(b.Calls, &agent.ToolCall{ID: fmt.Sprintf("c%d", i+1), Name: n, Args: map[string]any{}})
	}
	if err := d.BeforeTools(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range b.Calls {
		if m, ok := b.Answered[c.ID]; ok {
			if m["tool_call_id"] != c.ID || m["name"] != ToolName || m["type"] != "tool" || !strings.HasPrefix(llm.MessageText(m), "Task not run:") {
				t.Fatalf("refusal of %s = %v", c.ID, m)
			}
			out = append(out, c.ID)
		}
	}
	return out
}

func TestCapsPerResponse(t *testing.T) {
	d := newDelegation(t, Config{})
	human := []any{map[string]any{"type": "human", "content": "go"}}
	if got := capped(t, d, human, "task", "ls", "task", "task", "task", "task"); !slices.Equal(got, []string{"c5", "c6"}) {
		t.Fatalf("refused %v, want the 4th and 5th task calls (other tools do not count)", got)
	}
	d = newDelegation(t, Config{MaxPerResponse: 1})
	if got := capped(t, d, human, "task", "task"); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("refused %v", got)
	}
}

func TestCapsPerRun(t *testing.T) {
	d := newDelegation(t, Config{MaxPerRun: 4})
	history := []any{
		map[string]any{"type": "human", "content": "earlier request"},
		taskAnswer("old1", false), taskAnswer("old2", false), taskAnswer("old3", false),
		map[string]any{"type": "human", "content": "go"},
		taskAnswer("a", false), taskAnswer("b", false),
	}
	// Only delegations since the last human message count: 2 of 4 used.
	if got := capped(t, d, history, "task", "task", "task"); !slices.Equal(got, []string{"c3"}) {
		t.Fatalf("refused %v, want only the third call", got)
	}
}

// TestCapsRefusedCallsDoNotCountAgainstTheRun: a call refused by the
// per-response cap was not a delegation, so it must not use up the per-run
// total (DeerFlow counts ledger entries of delegations that happened).
func TestCapsRefusedCallsDoNotCountAgainstTheRun(t *testing.T) {
	d := newDelegation(t, Config{MaxPerResponse: 3, MaxPerRun: 4})
	history := []any{
		map[string]any{"type": "human", "content": "go"},
		taskAnswer("a", false), taskAnswer("b", false), taskAnswer("c", false), taskAnswer("d", true),
	}
	if got := capped(t, d, history, "task", "task"); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("refused %v, want only c2 (3 of 4 delegations were used)", got)
	}
}

func TestSystemPromptStatesTheLimits(t *testing.T) {
	d := newDelegation(t, Config{MaxPerResponse: 2, MaxPerRun: 5, Types: []Type{{Name: "analyst", Description: "Analyses data.\nSecond line is not shown.", SystemPrompt: "p"}}})
	p := d.SystemPrompt(nil)
	for _, want := range []string{"at most 2 task calls per response", "at most 5 task calls per run", "- general-purpose:", "- analyst: Analyses data."} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "Second line") {
		t.Error("prompt shows more than the first line of a description")
	}
	spec := d.Tools()[0].Spec()
	if spec.Name != ToolName || !strings.Contains(spec.Description, "At most 2 calls per response and 5 per run") || !strings.Contains(spec.Description, "analyst, general-purpose") {
		t.Errorf("tool spec = %+v", spec)
	}
}
