package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentserver/internal/asynctasks"
	"agentserver/internal/errdefs"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
)

// taskMetadataKey tags the threads of background tasks started over MCP.
const taskMetadataKey = "mcp_async_task"

// cancelTimeout bounds a cancellation made on behalf of a gone caller.
const cancelTimeout = 10 * time.Second

// maxListedTasks bounds list_async_tasks.
const maxListedTasks = 100

// taskTools are the names of the task tools; assistants get other names.
var taskTools = []string{"start_async_task", "check_async_task", "update_async_task", "cancel_async_task", "list_async_tasks"}

// schema is an object schema; required is never null (the TypeScript SDK
// rejects a null list).
func schema(props map[string]any, required ...string) map[string]any {
	if required == nil {
		required = []string{}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

// taskArgs are the arguments of the task tools.
type taskArgs struct {
	TaskID       string `json:"task_id"`
	Description  string `json:"description"`
	SubagentType string `json:"subagent_type"`
	Message      string `json:"message"`
	StatusFilter string `json:"status_filter"`
}

// taskTool adapts a task operation to an MCP tool handler.
func taskTool(op func(ctx context.Context, a taskArgs) (any, error)) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var a taskArgs
		if len(req.Params.Arguments) > 0 {
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return failure(fmt.Errorf("arguments: %w", err)), nil
			}
		}
		out, err := op(ctx, a)
		if err != nil {
			return failure(err), nil
		}
		return textResult(out), nil
	}
}

func (h *Handler) addTaskTools(s *mcp.Server) {
	taskID := map[string]any{"task_id": str("The task id start_async_task returned.")}
	s.AddTool(&mcp.Tool{Name: "start_async_task", Description: "Start an assistant of this server in the background on a new thread and return its task id at once.",
		InputSchema: schema(map[string]any{
			"description":   str("The instructions for the assistant (its first user message)."),
			"subagent_type": str("The assistant to run: its name, id or graph id."),
		}, "description", "subagent_type")}, taskTool(h.startTask))
	s.AddTool(&mcp.Tool{Name: "check_async_task", Description: "Check a background task: its status and, once it succeeded, its result.",
		InputSchema: schema(taskID, "task_id")}, taskTool(h.checkTask))
	s.AddTool(&mcp.Tool{Name: "update_async_task", Description: "Send new instructions to a background task: its current run is interrupted and a new one starts on the same thread.",
		InputSchema: schema(map[string]any{"task_id": taskID["task_id"], "message": str("The new instructions.")}, "task_id", "message")}, taskTool(h.updateTask))
	s.AddTool(&mcp.Tool{Name: "cancel_async_task", Description: "Cancel a background task's current run.",
		InputSchema: schema(taskID, "task_id")}, taskTool(h.cancelTask))
	s.AddTool(&mcp.Tool{Name: "list_async_tasks", Description: "List the background tasks started over MCP, newest first, with their live statuses.",
		InputSchema: schema(map[string]any{"status_filter": str("Only tasks with this status (pending, running, success, error, timeout, interrupted, cancelled); empty lists all.")})}, taskTool(h.listTasks))
}

// taskStatus is what the task tools report about a task.
type taskStatus struct {
	TaskID     string `json:"task_id"`
	Assistant  string `json:"assistant_id,omitempty"`
	RunID      string `json:"run_id,omitempty"`
	Status     string `json:"status"`
	Result     any    `json:"result,omitempty"`
	Error      string `json:"error,omitempty"`
	Interrupts []any  `json:"interrupts,omitempty"`
}

func (h *Handler) startTask(ctx context.Context, a taskArgs) (any, error) {
	if a.SubagentType == "" || a.Description == "" {
		return nil, fmt.Errorf("%w: description and subagent_type are required", errdefs.ErrInvalid)
	}
	asst, err := h.deps.Assistants.Get(ctx, a.SubagentType)
	if err != nil {
		return nil, err
	}
	th, err := h.deps.Threads.Create(ctx, threads.CreateParams{Metadata: map[string]any{taskMetadataKey: true, "assistant_id": asst.AssistantID.String()}})
	if err != nil {
		return nil, err
	}
	runID, err := h.local.Update(ctx, th.ThreadID.String(), asst.AssistantID.String(), a.Description)
	if err != nil {
		return nil, err
	}
	return taskStatus{TaskID: th.ThreadID.String(), Assistant: asst.AssistantID.String(), RunID: runID, Status: asynctasks.StatusRunning}, nil
}

// task loads a task's thread and latest run; a thread that is no task
// started over MCP is not found.
func (h *Handler) task(ctx context.Context, id string) (threads.Thread, storage.Run, error) {
	tid, err := uuid.Parse(id)
	if err != nil {
		return threads.Thread{}, storage.Run{}, fmt.Errorf("%w: task_id %q is not a task id", errdefs.ErrInvalid, id)
	}
	th, err := h.deps.Threads.Get(ctx, tid)
	if err != nil || th.Metadata[taskMetadataKey] != true {
		return th, storage.Run{}, fmt.Errorf("%w: no task %s", errdefs.ErrNotFound, id)
	}
	latest, _, err := h.deps.Runs.Search(ctx, storage.RunQuery{ThreadID: &tid, Limit: 1})
	if err != nil {
		return th, storage.Run{}, err
	}
	if len(latest) == 0 {
		return th, storage.Run{}, fmt.Errorf("%w: task %s has no run", errdefs.ErrNotFound, id)
	}
	return th, latest[0], nil
}

// status reports a task's latest run, with its result once it succeeded.
func (h *Handler) status(ctx context.Context, th threads.Thread, run storage.Run) (taskStatus, error) {
	tid := th.ThreadID.String()
	info, err := h.local.Run(ctx, tid, run.RunID.String())
	if err != nil {
		return taskStatus{}, err
	}
	assistant, _ := th.Metadata["assistant_id"].(string)
	out := taskStatus{TaskID: tid, Assistant: assistant, RunID: run.RunID.String(), Status: info.Status, Error: info.Error, Interrupts: info.Interrupts}
	if info.Status == asynctasks.StatusSuccess {
		out.Result, _ = h.local.LastMessage(ctx, tid)
	}
	return out, nil
}

func (h *Handler) checkTask(ctx context.Context, a taskArgs) (any, error) {
	th, run, err := h.task(ctx, a.TaskID)
	if err != nil {
		return nil, err
	}
	return h.status(ctx, th, run)
}

func (h *Handler) updateTask(ctx context.Context, a taskArgs) (any, error) {
	if a.Message == "" {
		return nil, fmt.Errorf("%w: message is required", errdefs.ErrInvalid)
	}
	th, _, err := h.task(ctx, a.TaskID)
	if err != nil {
		return nil, err
	}
	assistant, _ := th.Metadata["assistant_id"].(string)
	runID, err := h.local.Update(ctx, a.TaskID, assistant, a.Message)
	if err != nil {
		return nil, err
	}
	return taskStatus{TaskID: a.TaskID, Assistant: assistant, RunID: runID, Status: asynctasks.StatusRunning}, nil
}

func (h *Handler) cancelTask(ctx context.Context, a taskArgs) (any, error) {
	th, run, err := h.task(ctx, a.TaskID)
	if err != nil {
		return nil, err
	}
	if err := h.local.Cancel(ctx, a.TaskID, run.RunID.String()); err != nil && !errors.Is(err, errdefs.ErrConflict) {
		return nil, err
	}
	if _, err := h.local.Wait(ctx, a.TaskID, run.RunID.String()); err != nil {
		return nil, err
	}
	return h.status(ctx, th, run)
}

func (h *Handler) listTasks(ctx context.Context, a taskArgs) (any, error) {
	list, _, err := h.deps.Threads.Search(ctx, storage.ThreadQuery{Metadata: map[string]any{taskMetadataKey: true}, Desc: true, Limit: maxListedTasks})
	if err != nil {
		return nil, err
	}
	statuses := make([]*taskStatus, len(list))
	var wg sync.WaitGroup
	for i, th := range list {
		wg.Go(func() {
			if _, run, err := h.task(ctx, th.ThreadID.String()); err == nil {
				if st, err := h.status(ctx, th, run); err == nil {
					statuses[i] = &st
				}
			}
		})
	}
	wg.Wait()
	out := []taskStatus{}
	for _, st := range statuses {
		if st != nil && (a.StatusFilter == "" || a.StatusFilter == "all" || st.Status == a.StatusFilter) {
			out = append(out, *st)
		}
	}
	return map[string]any{"tasks": out}, nil
}
