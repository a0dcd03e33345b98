package agent

import (
	"context"
	"strings"

	"agentserver/internal/mcptools"
	"agentserver/internal/tools"
)

// mcpTools offers the tools of a spec's MCP servers. They are listed when
// the model is first called (and again after a session was reopened), so a
// server that is down at start-up does not keep the agent from loading; a
// run that needs a server that cannot be reached fails with its name.
type mcpTools struct {
	servers []*mcptools.Server
}

// Name identifies the middleware.
func (m *mcpTools) Name() string { return "mcp_servers" }

// find returns the MCP tool a call names, listing only the servers whose
// prefix the name carries (so a server that is down fails only its calls).
func (m *mcpTools) find(ctx context.Context, name string) (tools.Tool, error) {
	for _, s := range m.servers {
		if !strings.HasPrefix(name, mcptools.ToolName(s.Config().Name, "")) {
			continue
		}
		list, err := s.Tools(ctx)
		if err != nil {
			return nil, err
		}
		for _, t := range list {
			if t.Spec().Name == name {
				return t, nil
			}
		}
	}
	return nil, nil
}

// BeforeModel offers the MCP tools to the model, after the agent's own.
func (m *mcpTools) BeforeModel(ctx context.Context, call *ModelCall) error {
	for _, s := range m.servers {
		list, err := s.Tools(ctx)
		if err != nil {
			return err
		}
		for _, t := range list {
			call.Tools = append(call.Tools, t.Spec())
		}
	}
	return nil
}

// WrapTool runs the calls that name an MCP tool; others pass on.
func (m *mcpTools) WrapTool(ctx context.Context, call *ToolCall, next ToolHandler) (tools.Result, error) {
	t, err := m.find(ctx, call.Name)
	if err != nil || t == nil {
		if err == nil {
			return next(ctx, call)
		}
		return tools.Result{}, err
	}
	return t.Call(ctx, tools.Call{ID: call.ID, Args: call.Args, ThreadID: call.Runtime.ThreadID.String(), State: call.State, Config: call.Runtime.Config})
}
