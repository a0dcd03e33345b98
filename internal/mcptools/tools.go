package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentserver/internal/llm"
	"agentserver/internal/tools"
)

// maxToolName is the longest tool name chat model APIs accept.
const maxToolName = 64

// Tools lists the server's tools (opening a session if needed); the list
// is kept until the session ends.
func (s *Server) Tools(ctx context.Context) ([]tools.Tool, error) {
	if cached := s.cachedTools(); cached != nil {
		return cached, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout())
	defer cancel()
	var listed []*remoteTool
	err := s.withSession(ctx, func(cs *mcp.ClientSession) error {
		listed = nil
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			if len(s.cfg.Tools) == 0 || slices.Contains(s.cfg.Tools, t.Name) {
				listed = append(listed, s.remote(t))
			}
		}
		s.setTools(cs, listed)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mcp server %q: list tools: %w", s.cfg.Name, err)
	}
	return asTools(listed), nil
}

func (s *Server) cachedTools() []tools.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == nil || s.tools == nil {
		return nil
	}
	return asTools(s.tools)
}

// setTools records the tool list of cs, unless cs already ended.
func (s *Server) setTools(cs *mcp.ClientSession, list []*remoteTool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session == cs {
		s.tools = append([]*remoteTool{}, list...)
	}
}

func asTools(list []*remoteTool) []tools.Tool {
	out := make([]tools.Tool, len(list))
	for i, t := range list {
		out[i] = t
	}
	return out
}

// remoteTool is one tool of an MCP server, as an agent tool.
type remoteTool struct {
	server *Server
	remote string
	spec   llm.ToolSpec
}

func (s *Server) remote(t *mcp.Tool) *remoteTool {
	return &remoteTool{server: s, remote: t.Name, spec: llm.ToolSpec{
		Name:        ToolName(s.cfg.Name, t.Name),
		Description: t.Description,
		Parameters:  objectSchema(t.InputSchema),
	}}
}

// ToolName is the agent's name of a server's tool: "<server>_<tool>", with
// characters outside [A-Za-z0-9_-] replaced by '_' and cut to 64.
func ToolName(server, tool string) string {
	name := []byte(server + "_" + tool)
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			name[i] = '_'
		}
	}
	return string(name[:min(len(name), maxToolName)])
}

// objectSchema turns a tool's input schema into the generic JSON form the
// model client sends; a missing schema becomes an empty object schema.
func objectSchema(schema any) map[string]any {
	out := map[string]any{}
	if raw, err := json.Marshal(schema); err == nil {
		_ = json.Unmarshal(raw, &out)
	}
	if out == nil {
		out = map[string]any{}
	}
	if _, ok := out["type"]; !ok {
		out["type"] = "object"
	}
	if _, ok := out["properties"]; !ok {
		out["properties"] = map[string]any{}
	}
	return out
}

// Spec is the tool as the model sees it.
func (t *remoteTool) Spec() llm.ToolSpec { return t.spec }

// Call calls the remote tool within the server's timeout. A result the
// server marks as an error becomes the tool's error.
func (t *remoteTool) Call(ctx context.Context, call tools.Call) (tools.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, t.server.cfg.Timeout())
	defer cancel()
	var res *mcp.CallToolResult
	err := t.server.withSession(ctx, func(cs *mcp.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: t.remote, Arguments: call.Args})
		return err
	})
	if err != nil {
		if ctx.Err() != nil && context.Cause(ctx) == context.DeadlineExceeded {
			return tools.Result{}, fmt.Errorf("mcp tool %s: no answer within %s", t.spec.Name, t.server.cfg.Timeout())
		}
		return tools.Result{}, fmt.Errorf("mcp tool %s: %w", t.spec.Name, err)
	}
	text := resultText(res)
	if res.IsError {
		return tools.Result{}, fmt.Errorf("%s", text)
	}
	return tools.Result{Content: text}, nil
}

// resultText renders a tool result for the model: text parts as they are,
// other parts (images, resources) as their JSON, structured content when
// there is nothing else.
func resultText(res *mcp.CallToolResult) string {
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
			continue
		}
		raw, _ := json.Marshal(c)
		parts = append(parts, string(raw))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, string(raw))
	}
	return strings.Join(parts, "\n")
}
