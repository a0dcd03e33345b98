package main

import (
	"regexp"
	"slices"
	"strings"

	"agentserver/internal/llm/scripted"
)

// command is one line of rule 4: a pattern and the arguments of the tool
// call a matching line becomes.
type command struct {
	tool string
	re   *regexp.Regexp
	args func(m []string) map[string]any
}

// commands are rule 4's line commands, for the supervisor's five async
// task tools and the lead's task tool.
var commands = []command{
	{"start_async_task", regexp.MustCompile(`(?i)^start\s+([\w.-]+)\s*:\s*(.+)$`), func(m []string) map[string]any {
		return map[string]any{"subagent_type": m[1], "description": m[2]}
	}},
	{"check_async_task", regexp.MustCompile(`(?i)^check\s+(\S+)$`), func(m []string) map[string]any {
		return map[string]any{"task_id": m[1]}
	}},
	{"update_async_task", regexp.MustCompile(`(?i)^update\s+([^\s:]+)\s*:\s*(.+)$`), func(m []string) map[string]any {
		return map[string]any{"task_id": m[1], "message": m[2]}
	}},
	{"cancel_async_task", regexp.MustCompile(`(?i)^cancel\s+(\S+)$`), func(m []string) map[string]any {
		return map[string]any{"task_id": m[1]}
	}},
	{"list_async_tasks", regexp.MustCompile(`(?i)^list(?:\s+(\w+))?$`), func(m []string) map[string]any {
		if m[1] == "" {
			return map[string]any{}
		}
		return map[string]any{"status_filter": m[1]}
	}},
	{"task", regexp.MustCompile(`(?i)^delegate(?:\s+([\w.-]+))?\s*:\s*(.+)$`), func(m []string) map[string]any {
		kind := m[1]
		if kind == "" {
			kind = "general-purpose"
		}
		return map[string]any{"description": firstWords(m[2], 5), "prompt": m[2], "subagent_type": kind}
	}},
}

// commandCalls returns one call per line of text when every non-empty line
// is a command whose tool req offers; otherwise none.
func commandCalls(text string, req scripted.ChatRequest) []scripted.ToolCall {
	var calls []scripted.ToolCall
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		call, ok := commandCall(line, req)
		if !ok {
			return nil
		}
		calls = append(calls, call)
	}
	return calls
}

// commandCall matches one line against the commands.
func commandCall(line string, req scripted.ChatRequest) (scripted.ToolCall, bool) {
	offered := req.ToolNames()
	for _, c := range commands {
		if m := c.re.FindStringSubmatch(line); m != nil && slices.Contains(offered, c.tool) {
			return scripted.Call(c.tool, inToolsNames(req, c.tool, c.args(m))), true
		}
	}
	return scripted.ToolCall{}, false
}

// jsNames are the argument names the JavaScript deepagents tools use for
// the Python (and this server's) ones.
var jsNames = map[string]string{"subagent_type": "agentName", "task_id": "taskId", "status_filter": "statusFilter"}

// inToolsNames renames the arguments of a call to tool to the names the
// offered tool's schema uses, when it uses the JavaScript deepagents
// names (agentName, taskId, statusFilter) rather than the Python ones.
func inToolsNames(req scripted.ChatRequest, tool string, args map[string]any) map[string]any {
	var props map[string]any
	for _, t := range req.Tools {
		if t.Function.Name == tool {
			props, _ = t.Function.Parameters["properties"].(map[string]any)
		}
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		if js, ok := jsNames[k]; ok && props[js] != nil && props[k] == nil {
			k = js
		}
		out[k] = v
	}
	return out
}

// firstWords returns the first n words of s.
func firstWords(s string, n int) string {
	words := strings.Fields(s)
	return strings.Join(words[:min(n, len(words))], " ")
}
