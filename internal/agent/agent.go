package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"

	"agentserver/internal/channels"
	"agentserver/internal/graph"
	"agentserver/internal/llm"
	"agentserver/internal/mcptools"
	"agentserver/internal/metrics"
	"agentserver/internal/tools"
	"agentserver/internal/tracing"
)

// Node names of the agent graph.
const (
	ModelNode = "model"
	ToolsNode = "tools"
)

// DefaultMaxTurns bounds model calls per run when the spec sets none.
const DefaultMaxTurns = 25

// ModelFactory returns the model for a spec's model settings, with a
// per-assistant or per-run model name override ("" keeps the spec's).
type ModelFactory func(m Model, override string) (llm.Model, error)

// Agent is a compiled agent: its spec, tools and middlewares.
type Agent struct {
	spec        *Spec
	models      ModelFactory
	tools       map[string]tools.Tool
	middlewares []Middleware
	// workspace returns a thread's workspace directory.
	workspace func(threadID string) (string, error)
	// usesWorkspace is set when a tool works in the workspace; the
	// directory is then prepared while the first model call runs.
	usesWorkspace bool
	reducers      *channels.Registry
}

// Options are what an agent needs from the server.
type Options struct {
	Models ModelFactory
	// Tools are the tools the spec may name (the built-ins).
	Tools map[string]tools.Tool
	// Middlewares are added after the built-in ones the spec enables.
	Middlewares []Middleware
	Workspace   func(threadID string) (string, error)
	Reducers    *channels.Registry
	// Extend builds middlewares from spec sections the agent package does
	// not interpret itself (async subagents); they run after the built-ins.
	Extend func(graphID string, spec *Spec) ([]Middleware, error)
	// MCP owns the sessions of the MCP servers specs list; nil refuses
	// specs that list any.
	MCP *mcptools.Pool
	// Log receives start-up warnings about a spec; nil discards them.
	Log *slog.Logger
}

// New compiles the agent of graph graphID from a spec.
func New(graphID string, spec *Spec, opts Options) (*Agent, error) {
	a := &Agent{spec: spec, models: opts.Models, tools: map[string]tools.Tool{}, workspace: opts.Workspace, reducers: opts.Reducers}
	for _, name := range spec.Tools {
		t, ok := opts.Tools[name]
		if !ok && name == "bash" {
			if opts.Log != nil {
				opts.Log.Warn("an agent spec lists bash but the shell is off: the tool is not offered", "graph", graphID, "hint", "start the server with --enable-shell")
			}
			continue // shell tools need the server's --enable-shell as well
		}
		if !ok {
			return nil, fmt.Errorf("%w: field %q: tool %q is not available on this server", ErrInvalidSpec, "tools", name)
		}
		a.tools[name] = t
	}
	if opts.Models != nil {
		// Resolved now so that a bad model setting, or the offline model's
		// warning, shows at start rather than at the first run.
		if _, err := opts.Models(spec.Model, ""); err != nil {
			return nil, fmt.Errorf("%w: field %q: %v", ErrInvalidSpec, "model", err)
		}
	}
	if c := spec.Middleware.Compaction; c != nil {
		a.middlewares = append(a.middlewares, &compaction{cfg: *c, models: opts.Models, model: spec.Model})
	}
	if len(spec.Middleware.InterruptOn) > 0 {
		h, err := newApprovals(spec.Middleware.InterruptOn)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
		}
		a.middlewares = append(a.middlewares, h)
	}
	switch {
	case opts.MCP != nil:
		if servers := opts.MCP.Use(graphID, spec.MCPServers); len(servers) > 0 {
			a.middlewares = append(a.middlewares, &mcpTools{servers: servers})
		}
	case len(spec.MCPServers) > 0:
		return nil, fmt.Errorf("%w: field %q: MCP servers are not available here", ErrInvalidSpec, "mcp_servers")
	}
	if opts.Extend != nil {
		extra, err := opts.Extend(graphID, spec)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
		}
		a.middlewares = append(a.middlewares, extra...)
	}
	a.middlewares = append(a.middlewares, opts.Middlewares...)
	for _, mw := range a.middlewares {
		if tp, ok := mw.(ToolProvider); ok {
			for _, t := range tp.Tools() {
				a.tools[t.Spec().Name] = t
			}
		}
		if cp, ok := mw.(ChannelProvider); ok && opts.Reducers != nil {
			for name, r := range cp.Channels() {
				opts.Reducers.Register(name, r)
			}
		}
	}
	for _, t := range a.tools {
		if wu, ok := t.(tools.WorkspaceUser); ok && wu.UsesWorkspace() {
			a.usesWorkspace = a.workspace != nil
		}
	}
	return a, nil
}

// prepareWorkspace has the thread's workspace directory made while the
// model is called, so that the first tool call of a thread does not wait
// for it. The returned function waits for that work (the model node calls
// it before it returns, so nothing outlives the node).
func (a *Agent) prepareWorkspace(rt *graph.Runtime) (wait func()) {
	if !a.usesWorkspace {
		return func() {}
	}
	dir, err := a.workspace(rt.ThreadID.String())
	if err != nil || tools.WorkspaceKnown(dir) {
		return func() {} // errors are reported by the tool call that needs it
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tools.PrepareWorkspace(dir)
	}()
	return func() { <-done }
}

// Graph returns the agent loop: model → tools → model … until the model
// stops calling tools or max_turns model calls were made.
func (a *Agent) Graph() *graph.Graph {
	return &graph.Graph{
		Entry:    ModelNode,
		Initial:  a.initialValues(),
		OnCancel: a.answerOpenToolCalls,
		Nodes:    map[string]graph.Node{ModelNode: a.modelNode, ToolsNode: a.toolsNode},
		Edges: map[string]graph.Router{
			ModelNode: func(st graph.State) []string {
				if last := lastMessage(st); last != nil && len(toolCalls(last)) > 0 {
					return []string{ToolsNode}
				}
				return nil
			},
			ToolsNode: func(graph.State) []string { return []string{ModelNode} },
		},
	}
}

// initialValues collects the initial channel values of the middlewares.
func (a *Agent) initialValues() graph.State {
	var out graph.State
	for _, mw := range a.middlewares {
		if ci, ok := mw.(ChannelInitializer); ok {
			if out == nil {
				out = graph.State{}
			}
			for k, v := range ci.InitialValues() {
				out[k] = v
			}
		}
	}
	return out
}

func (a *Agent) maxTurns() int {
	if a.spec.MaxTurns > 0 {
		return a.spec.MaxTurns
	}
	return DefaultMaxTurns
}

// override reads a per-run (context) or per-assistant (configurable) value.
func override(rt *graph.Runtime, key string) string {
	if v, ok := rt.Context[key].(string); ok && v != "" {
		return v
	}
	if conf, ok := rt.Config["configurable"].(map[string]any); ok {
		if v, ok := conf[key].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

func (a *Agent) systemPrompt(rt *graph.Runtime, st graph.State) string {
	prompt := a.spec.SystemPrompt
	if o := override(rt, "system_prompt"); o != "" {
		prompt = o
	}
	parts := []string{}
	if prompt = fillUser(prompt, rt); prompt != "" {
		parts = append(parts, prompt)
	}
	for _, mw := range a.middlewares {
		if ps, ok := mw.(PromptSection); ok {
			if sec := ps.SystemPrompt(st); sec != "" {
				parts = append(parts, sec)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}

func (a *Agent) toolSpecs() []llm.ToolSpec {
	names := make([]string, 0, len(a.tools))
	for n := range a.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]llm.ToolSpec, len(names))
	for i, n := range names {
		out[i] = a.tools[n].Spec()
	}
	return out
}

// modelNode calls the model once and appends its answer.
func (a *Agent) modelNode(ctx context.Context, rt *graph.Runtime, st graph.State) (graph.Update, error) {
	defer a.prepareWorkspace(rt)()
	msgs, err := messagesOf(st)
	if err != nil {
		return graph.Update{}, err
	}
	msgs = answerDangling(msgs)
	call := &ModelCall{Runtime: rt, State: st, Messages: msgs, System: a.systemPrompt(rt, st), Tools: a.toolSpecs(), Update: map[string]any{}}
	for _, mw := range a.middlewares {
		if h, ok := mw.(BeforeModel); ok {
			if err := h.BeforeModel(ctx, call); err != nil {
				return graph.Update{}, err
			}
		}
	}
	if turnsSinceHuman(call.Messages)+1 >= a.maxTurns() {
		// The last allowed call: no tools, so the model answers now.
		call.Tools = nil
		rt.Note("stop_reason", "max_turns")
	}
	model, err := a.models(a.spec.Model, override(rt, "model"))
	if err != nil {
		return graph.Update{}, err
	}
	handler := ModelHandler(func(ctx context.Context, c *ModelCall) (llm.Response, error) {
		c.Request.Messages = withSystem(c.System, c.Messages)
		c.Request.Tools = c.Tools
		return model.Generate(ctx, c.Request, rt.MessageChunk)
	})
	for i := len(a.middlewares) - 1; i >= 0; i-- {
		if w, ok := a.middlewares[i].(WrapModel); ok {
			next := handler
			handler = func(ctx context.Context, c *ModelCall) (llm.Response, error) { return w.WrapModel(ctx, c, next) }
		}
	}
	call.Request = llm.Request{Temperature: a.spec.Model.Temperature, MaxTokens: a.spec.Model.MaxTokens}
	resp, err := handler(ctx, call)
	if err != nil {
		return graph.Update{}, err
	}
	reportUsage(rt, resp)
	resp.Message = plainJSON(resp.Message)
	for _, mw := range a.middlewares {
		if h, ok := mw.(AfterModel); ok {
			if err := h.AfterModel(ctx, call, &resp); err != nil {
				return graph.Update{}, err
			}
		}
	}
	update := call.Update
	prior, _ := update[channels.MessagesChannel].([]any)
	update[channels.MessagesChannel] = append(prior, resp.Message)
	return graph.Update{Values: update}, nil
}

// toolsNode runs the tool calls of the last AI message, concurrently, and
// answers each with a tool message.
func (a *Agent) toolsNode(ctx context.Context, rt *graph.Runtime, st graph.State) (graph.Update, error) {
	last := lastMessage(st)
	batch := &ToolBatch{Runtime: rt, State: st, Answered: map[string]llm.Message{}}
	for _, tc := range toolCalls(last) {
		m, _ := tc.(map[string]any)
		id, _ := m["id"].(string)
		name, _ := m["name"].(string)
		args, _ := m["args"].(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		batch.Calls = append(batch.Calls, &ToolCall{Runtime: rt, State: st, ID: id, Name: name, Args: args})
	}
	for _, mw := range a.middlewares {
		if h, ok := mw.(BeforeTools); ok {
			if err := h.BeforeTools(ctx, batch); err != nil {
				return graph.Update{}, err
			}
		}
	}
	results := make([]llm.Message, len(batch.Calls))
	updates := make([]map[string]any, len(batch.Calls))
	var wg sync.WaitGroup
	for i, c := range batch.Calls {
		if msg, ok := batch.Answered[c.ID]; ok {
			results[i] = msg
			continue
		}
		wg.Add(1)
		go func(i int, c *ToolCall) {
			defer wg.Done()
			toolStarted(rt, c)
			res, err := a.runTool(ctx, rt, c)
			results[i], updates[i] = toolMessage(c, res, err), res.Update
			toolFinished(ctx, rt, c, results[i], err)
		}(i, c)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return graph.Update{}, context.Cause(ctx)
	}
	out, err := a.combine(updates)
	if err != nil {
		return graph.Update{}, err
	}
	msgs := make([]any, 0, len(results)+1)
	ai, rewrite := last, batch.Edited
	if batch.Edited {
		ai = editedAIMessage(last, batch.Calls)
	}
	if delegated := delegatedUsage(results); delegated != nil {
		ai, rewrite = withDelegatedUsage(ai, delegated), true
	}
	if rewrite {
		msgs = append(msgs, ai) // replaces the AI message by id
	}
	for _, m := range results {
		msgs = append(msgs, m)
	}
	out[channels.MessagesChannel] = msgs
	return graph.Update{Values: out}, nil
}

// delegatedUsage sums the token usage that tool messages report for work
// done on the AI message's behalf (subagents: subagent_token_usage), or nil.
func delegatedUsage(results []llm.Message) map[string]int {
	var sum map[string]int
	for _, m := range results {
		kw, _ := m["additional_kwargs"].(map[string]any)
		u, ok := kw["subagent_token_usage"].(map[string]any)
		if !ok {
			continue
		}
		if sum == nil {
			sum = map[string]int{}
		}
		for _, k := range []string{"input_tokens", "output_tokens", "total_tokens"} {
			sum[k] += toInt(u[k])
		}
	}
	return sum
}

func toInt(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return 0
}

// withDelegatedUsage attaches subagent usage to the AI message that
// dispatched the work: its usage_metadata grows by it (as DeerFlow counts
// it) and additional_kwargs.subagent_token_usage keeps it apart.
func withDelegatedUsage(ai map[string]any, delegated map[string]int) map[string]any {
	out := plainJSON(ai)
	um, _ := out["usage_metadata"].(map[string]any)
	if um == nil {
		um = map[string]any{}
	}
	kw, _ := out["additional_kwargs"].(map[string]any)
	if kw == nil {
		kw = map[string]any{}
	}
	sub := map[string]any{}
	for k, v := range delegated {
		um[k] = float64(toInt(um[k]) + v)
		sub[k] = float64(v)
	}
	out["usage_metadata"], kw["subagent_token_usage"], out["additional_kwargs"] = um, sub, kw
	return out
}

// editedAIMessage is a copy of the AI message whose tool calls carry the
// names and arguments they ran with after a human edited them.
func editedAIMessage(ai map[string]any, calls []*ToolCall) map[string]any {
	out := plainJSON(ai)
	byID := map[string]*ToolCall{}
	for _, c := range calls {
		byID[c.ID] = c
	}
	for _, tc := range toolCalls(out) {
		m, _ := tc.(map[string]any)
		id, _ := m["id"].(string)
		if c := byID[id]; c != nil {
			m["name"], m["args"] = c.Name, c.Args
		}
	}
	return out
}

// combine folds the state writes of parallel tool calls into one update:
// two writes to a channel with a reducer are reduced (so two tasks started
// in one step both land in async_tasks); other channels keep the last write.
func (a *Agent) combine(updates []map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for _, u := range updates {
		for k, v := range u {
			prev, seen := out[k]
			var reduce channels.Reducer
			if a.reducers != nil {
				reduce = a.reducers.Reducer(k)
			}
			if !seen || reduce == nil {
				out[k] = v
				continue
			}
			merged, err := reduce(prev, v)
			if err != nil {
				return nil, err
			}
			out[k] = merged
		}
	}
	return out, nil
}

func (a *Agent) runTool(ctx context.Context, rt *graph.Runtime, c *ToolCall) (tools.Result, error) {
	handler := ToolHandler(func(ctx context.Context, c *ToolCall) (tools.Result, error) {
		t, ok := a.tools[c.Name]
		if !ok {
			return tools.Result{}, fmt.Errorf("unknown tool %q (available: %s)", c.Name, strings.Join(a.toolNames(), ", "))
		}
		ws := ""
		if a.workspace != nil {
			var err error
			if ws, err = a.workspace(rt.ThreadID.String()); err != nil {
				return tools.Result{}, err
			}
		}
		return t.Call(ctx, tools.Call{ID: c.ID, Args: c.Args, Workspace: ws, ThreadID: rt.ThreadID.String(), State: c.State, Config: rt.Config, Emit: toolProgress(rt, c), ReportUsage: rt.ReportUsage, Namespaced: rt.Namespaced})
	})
	for i := len(a.middlewares) - 1; i >= 0; i-- {
		if w, ok := a.middlewares[i].(WrapTool); ok {
			next := handler
			handler = func(ctx context.Context, c *ToolCall) (tools.Result, error) { return w.WrapTool(ctx, c, next) }
		}
	}
	label := a.toolLabel(c.Name)
	ctx, span := tracing.Start(ctx, "tool "+label, attribute.String("gen_ai.tool.name", label), attribute.String("gen_ai.tool.call.id", c.ID))
	res, err := handler(ctx, c)
	tracing.End(span, err)
	metrics.ToolCall(label, err != nil)
	return res, err
}

// toolLabel is the metrics label of a tool call: its name, or "(unknown)"
// for a name the agent does not have (a model can make up any name).
func (a *Agent) toolLabel(name string) string {
	if _, ok := a.tools[name]; ok {
		return name
	}
	return "(unknown)"
}

func (a *Agent) toolNames() []string {
	out := make([]string, 0, len(a.tools))
	for n := range a.tools {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// toolMessage answers a tool call; an error becomes the message's text.
func toolMessage(c *ToolCall, res tools.Result, err error) llm.Message {
	msg := llm.Message{
		"type": "tool", "id": uuid.NewString(), "tool_call_id": c.ID, "name": c.Name,
		"content": res.Content, "status": "success", "additional_kwargs": map[string]any{}, "response_metadata": map[string]any{},
	}
	if res.Metadata != nil {
		msg["additional_kwargs"] = res.Metadata
	}
	if err != nil {
		msg["content"] = "Error: " + err.Error()
		msg["status"] = "error"
	}
	return msg
}

func reportUsage(rt *graph.Runtime, resp llm.Response) {
	rt.ReportUsage(graph.Usage{Model: resp.Model, InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens, TotalTokens: resp.Usage.TotalTokens})
}

// plainJSON converts a message to the generic JSON form threads store
// (maps and []any), so that typed slices never reach the state.
func plainJSON(m llm.Message) llm.Message {
	raw, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out llm.Message
	if json.Unmarshal(raw, &out) != nil {
		return m
	}
	return out
}

// messagesOf returns the state's messages in LangChain form. Messages the
// reducer stored are already in that form and are returned as they are,
// shared with the state (which is never modified in place); anything else
// is normalized into a copy.
func messagesOf(st graph.State) ([]llm.Message, error) {
	raw, ok := st[channels.MessagesChannel]
	if !ok || raw == nil {
		return nil, nil
	}
	list, isList := raw.([]any)
	if !isList {
		list = []any{raw}
	}
	out := make([]llm.Message, len(list))
	for i, m := range list {
		msg, _ := m.(map[string]any)
		if msg == nil || !channels.IsNormalized(msg) {
			nm, err := channels.NormalizeMessage(m)
			if err != nil {
				return nil, err
			}
			msg = nm
		}
		out[i] = msg
	}
	return out, nil
}

// answerDangling returns msgs with a tool message after every tool call no
// tool message answers, as deepagents' PatchToolCallsMiddleware does: chat
// models refuse a history with an unanswered call, which a thread keeps
// when a client ends a run paused for approval (Agent Chat UI's "Mark as
// Resolved" resumes with command goto __end__) or edits its state. msgs is
// not modified; it is returned as it is when no call is unanswered.
func answerDangling(msgs []llm.Message) []llm.Message {
	answered := map[string]bool{}
	for _, m := range msgs {
		if m["type"] == "tool" {
			id, _ := m["tool_call_id"].(string)
			answered[id] = true
		}
	}
	var out []llm.Message
	for i, m := range msgs {
		var missing []llm.Message
		for _, c := range toolCalls(m) {
			call, _ := c.(map[string]any)
			id, _ := call["id"].(string)
			if id == "" || answered[id] {
				continue
			}
			answered[id] = true
			name, _ := call["name"].(string)
			missing = append(missing, llm.Message{"type": "tool", "id": uuid.NewString(), "tool_call_id": id, "name": name, "status": "error",
				"content": fmt.Sprintf("Tool call %s with id %s was cancelled - another message came in before it could be completed.", name, id)})
		}
		if missing != nil && out == nil {
			out = append(make([]llm.Message, 0, len(msgs)+len(missing)), msgs[:i]...)
		}
		if out != nil {
			out = append(append(out, m), missing...)
		}
	}
	if out == nil {
		return msgs
	}
	return out
}

func withSystem(system string, msgs []llm.Message) []llm.Message {
	if system == "" {
		return msgs
	}
	out := make([]llm.Message, 0, len(msgs)+1)
	out = append(out, llm.Message{"type": "system", "content": system})
	return append(out, msgs...)
}

func lastMessage(st graph.State) map[string]any {
	list, _ := st[channels.MessagesChannel].([]any)
	if len(list) == 0 {
		return nil
	}
	m, _ := list[len(list)-1].(map[string]any)
	return m
}

func toolCalls(msg map[string]any) []any {
	if msg == nil || msg["type"] != "ai" {
		return nil
	}
	calls, _ := msg["tool_calls"].([]any)
	return calls
}

// turnsSinceHuman counts AI messages after the last human message: the
// model calls made for the current request.
func turnsSinceHuman(msgs []llm.Message) int {
	n := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		switch msgs[i]["type"] {
		case "human":
			return n
		case "ai":
			n++
		}
	}
	return n
}

// estimateTokens is a cheap size estimate: about four characters a token.
func estimateTokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		raw, _ := json.Marshal(m["content"])
		n += len(raw)/4 + 4
		if calls, ok := m["tool_calls"].([]any); ok && len(calls) > 0 {
			raw, _ := json.Marshal(calls)
			n += len(raw) / 4
		}
	}
	return n
}
