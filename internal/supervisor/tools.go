package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"agentserver/internal/asynctasks"
	"agentserver/internal/llm"
	"agentserver/internal/metrics"
	"agentserver/internal/tools"
)

// Argument descriptions the model sees (deepagents' schemas).
const (
	descDescription = "A detailed description of the task for the async subagent to perform."
	descType        = "The type of async subagent to use. Must be one of the available types listed in the tool description."
	descTaskID      = "The exact task_id string returned by start_async_task. Pass it verbatim."
	descMessage     = "Follow-up instructions or context to send to the subagent."
	descFilter      = "Filter tasks by status. One of: 'running', 'success', 'error', 'cancelled', 'all'. Defaults to 'all'."
	staleNote       = "Statuses shown earlier in the conversation are always stale, so call this to get the current status rather than reporting a status from a previous tool result."
)

func stringProp(desc string) map[string]any {
	return map[string]any{"type": "string", "description": desc}
}

func objectSchema(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// arg reads the first present string argument among names (Python names
// first, then the JS aliases).
func arg(args map[string]any, names ...string) string {
	for _, n := range names {
		if v, ok := args[n].(string); ok {
			return v
		}
	}
	return ""
}

func text(s string) tools.Result { return tools.Result{Content: s} }

func notTracked(id string) tools.Result {
	q, _ := json.Marshal(id) // a quoted form close to Python's repr
	return text("No tracked task found for task_id: '" + strings.Trim(string(q), `"`) + "'")
}

// transportOf returns a tracked task's transport, or a clear message when
// its subagent was renamed or removed from the configuration (deepagents
// raises a KeyError there, #5640).
func (s *Supervisor) transportOf(t Task) (Subagent, asynctasks.Transport, string) {
	sub, ok := s.subagents[t.AgentName]
	if !ok {
		return sub, nil, fmt.Sprintf("Async subagent type `%s` of task %s is no longer configured. Available types: %s", t.AgentName, t.TaskID, s.allowedTypes())
	}
	return sub, s.transports[t.AgentName], ""
}

// lookup finds the task a tool call names and its transport; refusal is the
// tool result to return when there is none.
func (s *Supervisor) lookup(c tools.Call) (Task, Subagent, asynctasks.Transport, *tools.Result) {
	id := arg(c.Args, "task_id", "taskId")
	task, ok := trackedTask(c.State, id)
	if !ok {
		r := notTracked(id)
		return task, Subagent{}, nil, &r
	}
	sub, tr, missing := s.transportOf(task)
	if tr == nil {
		r := text(missing)
		return task, sub, nil, &r
	}
	return task, sub, tr, nil
}

// status looks a task up and asks its server for its run's state; refusal
// is the tool result when either fails (failure prefixes the error).
func (s *Supervisor) status(ctx context.Context, c tools.Call, failure string) (Task, asynctasks.Transport, asynctasks.RunInfo, *tools.Result) {
	task, _, tr, refusal := s.lookup(c)
	if refusal != nil {
		return task, nil, asynctasks.RunInfo{}, refusal
	}
	info, err := tr.Run(ctx, task.ThreadID, task.RunID)
	if err != nil {
		r := text(fmt.Sprintf("%s: %v", failure, err))
		return task, nil, info, &r
	}
	return task, tr, info, nil
}

type startTool struct{ s *Supervisor }

func (t *startTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "start_async_task",
		Description: "Start an async subagent on its server. It works in the background and this tool returns a task ID immediately.\n\n" +
			"Available async agent types:\n" + t.s.typesList() + "\n\n## Usage notes:\n" +
			"1. The tool returns at once with a task ID. Report the task ID to the user and stop; do NOT check the status right away.\n" +
			"2. Use check_async_task only when the user asks how the task is going.\n" +
			"3. Use update_async_task to give a running task new instructions.\n" +
			"4. Several tasks can run at the same time.\n" +
			"5. The subagent runs on its own server with its own tools.",
		Parameters: objectSchema(map[string]any{"description": stringProp(descDescription), "subagent_type": stringProp(descType)}, "description", "subagent_type"),
	}
}

func (t *startTool) Call(ctx context.Context, c tools.Call) (tools.Result, error) {
	s := t.s
	desc, kind := arg(c.Args, "description"), arg(c.Args, "subagent_type", "agentName", "agent_name")
	sub, ok := s.subagents[kind]
	if !ok {
		return text(fmt.Sprintf("Unknown async subagent type `%s`. Available types: %s", kind, s.allowedTypes())), nil
	}
	parent := asynctasks.Parent{ThreadID: c.ThreadID, RunID: configurable(c.Config, "run_id"), AgentName: kind}
	threadID, runID, err := s.transports[kind].Start(asynctasks.WithParent(ctx, parent), sub.GraphID, desc)
	if err != nil {
		return text(fmt.Sprintf("Failed to launch async subagent '%s': %v", kind, err)), nil
	}
	metrics.AsyncTaskStarted()
	now := s.stamp()
	task := Task{TaskID: threadID, AgentName: kind, ThreadID: threadID, RunID: runID, Status: asynctasks.StatusRunning, CreatedAt: now, LastCheckedAt: now, LastUpdatedAt: now}
	s.watch(c, task)
	return tools.Result{Content: "Launched async subagent. task_id: " + threadID, Update: update(task)}, nil
}

type checkTool struct{ s *Supervisor }

func (t *checkTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        "check_async_task",
		Description: "Check the status of an async subagent task. Returns the current status and, if complete, the result. " + staleNote,
		Parameters:  objectSchema(map[string]any{"task_id": stringProp(descTaskID)}, "task_id"),
	}
}

func (t *checkTool) Call(ctx context.Context, c tools.Call) (tools.Result, error) {
	s := t.s
	task, tr, info, refusal := s.status(ctx, c, "Failed to get run status")
	if refusal != nil {
		return *refusal, nil
	}
	result := pyObject{{"status", info.Status}, {"thread_id", task.ThreadID}}
	switch info.Status {
	case asynctasks.StatusSuccess:
		content, err := tr.LastMessage(ctx, task.ThreadID)
		switch {
		case err != nil || content == nil:
			result = append(result, pyField{"result", "(completed with no output messages)"})
		default:
			result = append(result, pyField{"result", content})
		}
	case asynctasks.StatusError:
		msg := info.Error
		if msg == "" {
			msg = "The async subagent encountered an error."
		}
		result = append(result, pyField{"error", msg})
	case asynctasks.StatusInterrupted:
		if len(info.Interrupts) > 0 {
			result = append(result, pyField{"interrupts", info.Interrupts})
		}
	}
	return tools.Result{Content: result.String(), Update: update(s.refreshed(task, info.Status))}, nil
}

// refreshed is a task after asking its server: checked now, updated now if
// its status changed.
func (s *Supervisor) refreshed(t Task, status string) Task {
	now := s.stamp()
	t.LastCheckedAt = now
	if status != t.Status {
		t.Status, t.LastUpdatedAt = status, now
	}
	return t
}

type updateTool struct{ s *Supervisor }

func (t *updateTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "update_async_task",
		Description: "Send updated instructions to an async subagent. Interrupts the current run and starts a new one on the same thread, " +
			"so the subagent sees the full conversation history plus your new message. The task_id remains the same.",
		Parameters: objectSchema(map[string]any{"task_id": stringProp(descTaskID), "message": stringProp(descMessage)}, "task_id", "message"),
	}
}

func (t *updateTool) Call(ctx context.Context, c tools.Call) (tools.Result, error) {
	s := t.s
	msg := arg(c.Args, "message")
	task, sub, tr, refusal := s.lookup(c)
	if refusal != nil {
		return *refusal, nil
	}
	runID, err := tr.Update(ctx, task.ThreadID, sub.GraphID, msg)
	if err != nil {
		return text(fmt.Sprintf("Failed to update async subagent: %v", err)), nil
	}
	task.RunID, task.Status, task.LastUpdatedAt = runID, asynctasks.StatusRunning, s.stamp()
	s.watch(c, task)
	return tools.Result{Content: "Updated async subagent. task_id: " + task.TaskID, Update: update(task)}, nil
}

type cancelTool struct{ s *Supervisor }

func (t *cancelTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        "cancel_async_task",
		Description: "Cancel a running async subagent task. Use this to stop a task that is no longer needed.",
		Parameters:  objectSchema(map[string]any{"task_id": stringProp(descTaskID)}, "task_id"),
	}
}

// Call cancels the task's run only while it is live, and records
// "cancelled" only then; a task that already ended keeps its real final
// status (deepagents writes "cancelled" blindly, #6234).
func (t *cancelTool) Call(ctx context.Context, c tools.Call) (tools.Result, error) {
	s := t.s
	task, tr, info, refusal := s.status(ctx, c, "Failed to cancel run")
	if refusal != nil {
		return *refusal, nil
	}
	if asynctasks.Terminal(info.Status) {
		done := s.refreshed(task, info.Status)
		return tools.Result{
			Content: fmt.Sprintf("Task %s already finished with status %s; nothing was cancelled.", task.TaskID, info.Status),
			Update:  update(done),
		}, nil
	}
	if err := tr.Cancel(ctx, task.ThreadID, task.RunID); err != nil {
		return text(fmt.Sprintf("Failed to cancel run: %v", err)), nil
	}
	cancelled := s.refreshed(task, asynctasks.StatusCancelled)
	return tools.Result{Content: "Cancelled async subagent task: " + task.TaskID, Update: update(cancelled)}, nil
}

type listTool struct{ s *Supervisor }

func (t *listTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: "list_async_tasks",
		Description: "List tracked async subagent tasks with their current live statuses. By default shows all tasks. Use `status_filter` to narrow by status " +
			"(e.g. 'running', 'success', 'error', 'cancelled'). Use `check_async_task` to get the full result of a specific completed task. " + staleNote,
		Parameters: map[string]any{"type": "object", "properties": map[string]any{
			"status_filter": map[string]any{"type": []any{"string", "null"}, "enum": []any{"running", "success", "error", "cancelled", "all", nil}, "description": descFilter},
		}},
	}
}

// Call refreshes the live status of every non-terminal task first, then
// filters (deepagents filters on stale statuses, #5243).
func (t *listTool) Call(ctx context.Context, c tools.Call) (tools.Result, error) {
	s := t.s
	filter := arg(c.Args, "status_filter", "statusFilter")
	tasks := tasksOf(c.State)
	if len(tasks) == 0 {
		return text("No async subagent tasks tracked."), nil
	}
	fresh := make([]Task, len(tasks))
	var wg sync.WaitGroup
	for i, task := range tasks {
		fresh[i] = task
		if asynctasks.Terminal(task.Status) {
			fresh[i] = s.refreshed(task, task.Status)
			continue
		}
		_, tr, _ := s.transportOf(task)
		if tr == nil {
			continue
		}
		wg.Add(1)
		go func(i int, task Task) {
			defer wg.Done()
			info, err := tr.Run(ctx, task.ThreadID, task.RunID)
			if err != nil {
				return // keep the cached status
			}
			fresh[i] = s.refreshed(task, info.Status)
		}(i, task)
	}
	wg.Wait()
	var lines []string
	for _, task := range fresh {
		if filter == "" || filter == "all" || task.Status == filter {
			lines = append(lines, fmt.Sprintf("- task_id: %s  agent: %s  status: %s", task.TaskID, task.AgentName, task.Status))
		}
	}
	content := fmt.Sprintf("%d tracked task(s):\n%s", len(lines), strings.Join(lines, "\n"))
	if len(lines) == 0 {
		content = fmt.Sprintf("No tracked tasks with status '%s'.", filter)
	}
	return tools.Result{Content: content, Update: update(fresh...)}, nil
}

// pyObject renders a JSON object the way Python's json.dumps does by
// default (", " and ": " separators), which deepagents' tools return.
type pyObject []pyField

type pyField struct {
	key   string
	value any
}

func (o pyObject) String() string {
	parts := make([]string, len(o))
	for i, f := range o {
		k, _ := json.Marshal(f.key)
		v, err := json.Marshal(f.value)
		if err != nil {
			v = []byte(`null`)
		}
		parts[i] = string(k) + ": " + string(v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
