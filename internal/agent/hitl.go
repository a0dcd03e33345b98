package agent

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/google/uuid"

	"agentserver/internal/graph"
	"agentserver/internal/llm"
)

// Decisions a human may take on a paused tool call.
const (
	DecisionApprove = "approve"
	DecisionEdit    = "edit"
	DecisionReject  = "reject"
)

var allDecisions = []string{DecisionApprove, DecisionEdit, DecisionReject}

// approvals pauses the run before tools that need a human's approval
// (interrupt_on) and applies the decisions given with command.resume.
type approvals struct {
	allowed map[string][]string // tool name -> allowed decisions
}

func (h *approvals) Name() string { return "human_in_the_loop" }

// parseInterruptRule reads one interrupt_on entry: true (every decision),
// false (no approval), or {"allowed_decisions": [...]}.
func parseInterruptRule(v any) ([]string, error) {
	switch t := v.(type) {
	case bool:
		if t {
			return allDecisions, nil
		}
		return nil, nil
	case map[string]any:
		raw, ok := t["allowed_decisions"].([]any)
		if !ok {
			return nil, fmt.Errorf("expected true, false or {allowed_decisions: [approve, edit, reject]}")
		}
		var out []string
		for _, d := range raw {
			s, _ := d.(string)
			if !slices.Contains(allDecisions, s) {
				return nil, fmt.Errorf("unknown decision %v (use approve, edit or reject)", d)
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("expected true, false or {allowed_decisions: [...]}")
}

func newApprovals(rules map[string]any) (*approvals, error) {
	h := &approvals{allowed: map[string][]string{}}
	for tool, v := range rules {
		allowed, err := parseInterruptRule(v)
		if err != nil {
			return nil, fmt.Errorf("middleware.interrupt_on.%s: %v", tool, err)
		}
		if len(allowed) > 0 {
			h.allowed[tool] = allowed
		}
	}
	return h, nil
}

// BeforeTools pauses when a call needs approval and no decision was given,
// or applies the decisions of command.resume.
func (h *approvals) BeforeTools(ctx context.Context, batch *ToolBatch) error {
	var pending []*ToolCall
	for _, c := range batch.Calls {
		if _, ok := h.allowed[c.Name]; ok {
			pending = append(pending, c)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	resume, ok := batch.Runtime.Resume()
	if !ok {
		return graph.Interrupt(h.request(pending))
	}
	decisions, err := decisionsOf(resume, len(pending))
	if err != nil {
		return err
	}
	for i, c := range pending {
		d := decisions[i]
		kind, _ := d["type"].(string)
		if !slices.Contains(h.allowed[c.Name], kind) {
			return fmt.Errorf("decision %q is not allowed for tool %s (allowed: %v)", kind, c.Name, h.allowed[c.Name])
		}
		switch kind {
		case DecisionEdit:
			args := editedArgs(d)
			if args == nil {
				return fmt.Errorf("an edit decision for tool %s needs args", c.Name)
			}
			c.Args = args
			if ea, ok := d["edited_action"].(map[string]any); ok {
				if name, ok := ea["name"].(string); ok && name != "" {
					c.Name = name
				}
			}
			batch.Edited = true
		case DecisionReject:
			text := "The user rejected this call to " + c.Name + "."
			if m, ok := d["message"].(string); ok && m != "" {
				text += " " + m
			}
			batch.Answered[c.ID] = llm.Message{
				"type": "tool", "id": uuid.NewString(), "tool_call_id": c.ID, "name": c.Name, "content": text,
				"status": "error", "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{},
			}
		}
	}
	return nil
}

// request is the interrupt payload: the calls to review and what may be
// decided for each.
func (h *approvals) request(pending []*ToolCall) map[string]any {
	var actions, configs []any
	for _, c := range pending {
		actions = append(actions, map[string]any{"name": c.Name, "args": c.Args, "id": c.ID,
			"description": "Tool execution requires approval: " + c.Name})
		allowed := append([]string(nil), h.allowed[c.Name]...)
		sort.Strings(allowed)
		configs = append(configs, map[string]any{"action_name": c.Name, "allowed_decisions": allowed})
	}
	return map[string]any{"action_requests": actions, "review_configs": configs}
}

// decisionsOf accepts {"decisions": [...]}, a bare list, or one decision
// (applied to every pending call).
func decisionsOf(resume any, n int) ([]map[string]any, error) {
	var list []any
	switch t := resume.(type) {
	case map[string]any:
		if ds, ok := t["decisions"].([]any); ok {
			list = ds
		} else {
			for i := 0; i < n; i++ {
				list = append(list, t)
			}
		}
	case []any:
		list = t
	case string:
		for i := 0; i < n; i++ {
			list = append(list, map[string]any{"type": t})
		}
	default:
		return nil, fmt.Errorf("command.resume must be a decision, a list of decisions or {decisions: [...]}")
	}
	if len(list) != n {
		return nil, fmt.Errorf("command.resume has %d decisions for %d pending tool calls", len(list), n)
	}
	out := make([]map[string]any, n)
	for i, d := range list {
		m, ok := d.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("decision %d must be an object with a type", i)
		}
		out[i] = m
	}
	return out, nil
}

func editedArgs(d map[string]any) map[string]any {
	if a, ok := d["args"].(map[string]any); ok {
		return a
	}
	if ea, ok := d["edited_action"].(map[string]any); ok {
		if a, ok := ea["args"].(map[string]any); ok {
			return a
		}
	}
	return nil
}
