package protostream

import (
	"encoding/json"
	"regexp"
	"sort"
	"sync"

	"github.com/google/uuid"

	"agentserver/internal/storage"
)

// Async subagents (the supervisor's start_async_task) run on threads of
// their own. A task started from a followed thread is shown in that
// thread's stream under the namespace async_task:<task id> (the task id is
// its thread id): the task's own events (lifecycle of each of its runs,
// messages, tools, ...) are mirrored there, and a synthetic call of the
// `task` tool (tool_call_id async:<task id>, input {subagent_type,
// description}) announces it and carries its answer, which is how the
// SDK's thread.subagents discovers subagents.

// asyncLink ties an async task's thread to the thread that started it.
type asyncLink struct {
	parent uuid.UUID
	ns     []string
	// announced: the synthetic task call has started in the parent.
	announced bool
	// ended, output and failure describe the task's latest run once it
	// ended (reported when the call is announced after it).
	ended   bool
	output  any
	failure string
}

// asyncLinks is the hub's table of async tasks, by task thread. Its lock
// is taken last: never hold it while taking a feed's lock.
type asyncLinks struct {
	mu    sync.Mutex
	links map[uuid.UUID]*asyncLink
	// remote are the tasks started on other servers, by task id.
	remote map[uuid.UUID]*remoteTask
}

// remoteTask is an async task whose events this server does not see: its
// status comes from the supervisor's async_tasks channel.
type remoteTask struct {
	status string
	result any
}

func (a *asyncLinks) get(child uuid.UUID) *asyncLink {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.links[child]
}

// asyncNamespace is the namespace of an async task in its parent's stream.
func asyncNamespace(taskID uuid.UUID) []string {
	return []string{"async_task:" + taskID.String()}
}

// ChildRunCreated links a task thread to the followed thread whose run
// created it, before the task's run can start, so that none of its
// events is missed.
func (h *Hub) ChildRunCreated(parent, child storage.Run) {
	if h.feed(parent.ThreadID) == nil {
		return
	}
	if _, err := h.Follow(child.ThreadID); err != nil {
		return
	}
	h.async.mu.Lock()
	defer h.async.mu.Unlock()
	if h.async.links == nil {
		h.async.links = map[uuid.UUID]*asyncLink{}
	}
	if l := h.async.links[child.ThreadID]; l != nil {
		l.ended, l.output, l.failure = false, nil, ""
		return
	}
	h.async.links[child.ThreadID] = &asyncLink{parent: parent.ThreadID, ns: asyncNamespace(child.ThreadID)}
}

// mirrorLocked republishes a task thread's events in its parent's stream
// under the task's namespace. The task's feed lock is held; the parent's
// is taken here (locks go from task to parent, never back).
func (h *Hub) mirrorLocked(f *feed, evs []out) {
	l := h.async.get(f.threadID)
	if l == nil {
		return
	}
	mirrored := make([]out, len(evs))
	for i, e := range evs {
		e.ns = append(append(make([]string, 0, len(l.ns)+len(e.ns)), l.ns...), e.ns...)
		mirrored[i] = e
	}
	h.publish(l.parent, mirrored...)
}

var launchedTaskID = regexp.MustCompile(`task_id:\s*([0-9a-fA-F-]{36})`)

// asyncStarted announces an async task in its parent's stream when
// start_async_task has answered with its id: the synthetic task call
// starts (and finishes at once when the task already ended).
func (h *Hub) asyncStarted(input map[string]any, output any) []out {
	text, _ := toolOutput(output).(string)
	m := launchedTaskID.FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	taskID, err := uuid.Parse(m[1])
	if err != nil {
		return nil
	}
	h.async.mu.Lock()
	l := h.async.links[taskID]
	if l == nil {
		defer h.async.mu.Unlock()
		return h.remoteStartedLocked(taskID, input)
	}
	if l.announced {
		h.async.mu.Unlock()
		return nil
	}
	l.announced = true
	link := *l
	h.async.mu.Unlock()
	evs := []out{taskCallStart(taskID, input)}
	if link.ended {
		evs = append(evs, taskCallEnd(link))
	}
	return evs
}

// taskCallStart is the start of a task's synthetic call.
func taskCallStart(taskID uuid.UUID, input map[string]any) out {
	name, _ := input["subagent_type"].(string)
	desc, _ := input["description"].(string)
	return out{method: "tools", ns: asyncNamespace(taskID), data: map[string]any{"event": "tool-started", "tool_call_id": "async:" + taskID.String(), "tool_name": "task", "input": map[string]any{"subagent_type": name, "description": desc}}}
}

// remoteStartedLocked announces a task started on another server: its
// synthetic call and lifecycle started (h.async.mu held).
func (h *Hub) remoteStartedLocked(taskID uuid.UUID, input map[string]any) []out {
	if h.async.remote == nil {
		h.async.remote = map[uuid.UUID]*remoteTask{}
	}
	if h.async.remote[taskID] != nil {
		return nil
	}
	h.async.remote[taskID] = &remoteTask{status: "running"}
	graph, _ := input["subagent_type"].(string)
	return []out{
		taskCallStart(taskID, input),
		{method: "lifecycle", ns: asyncNamespace(taskID), data: map[string]any{"event": "started", "graph_name": graph}},
	}
}

// remoteChecked keeps the result check_async_task reported for a remote
// task, for the end of its synthetic call.
func (h *Hub) remoteChecked(output any) {
	text, _ := toolOutput(output).(string)
	var r struct {
		ThreadID string `json:"thread_id"`
		Result   any    `json:"result"`
	}
	if json.Unmarshal([]byte(text), &r) != nil {
		return
	}
	id, err := uuid.Parse(r.ThreadID)
	if err != nil {
		return
	}
	h.async.mu.Lock()
	defer h.async.mu.Unlock()
	if t := h.async.remote[id]; t != nil && r.Result != nil {
		t.result = r.Result
	}
}

// taskLifecycle maps an async_tasks status to a lifecycle event.
var taskLifecycle = map[string]string{
	"pending": "started", "running": "running", "success": "completed",
	"error": "failed", "cancelled": "failed", "timeout": "failed", "interrupted": "interrupted",
}

// remoteStatus turns the status changes of remote tasks in a state's
// async_tasks channel into lifecycle events under their namespaces; a
// task that ended also ends its synthetic call.
func (h *Hub) remoteStatus(values any) []out {
	v, _ := values.(map[string]any)
	tasks, _ := v["async_tasks"].(map[string]any)
	if len(tasks) == 0 {
		return nil
	}
	ids := make([]string, 0, len(tasks))
	for id := range tasks {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	h.async.mu.Lock()
	defer h.async.mu.Unlock()
	var evs []out
	for _, id := range ids {
		rec, _ := tasks[id].(map[string]any)
		status, _ := rec["status"].(string)
		taskID, err := uuid.Parse(id)
		t := h.async.remote[taskID]
		event, known := taskLifecycle[status]
		if err != nil || t == nil || t.status == status || !known {
			continue
		}
		t.status = status
		ns := asyncNamespace(taskID)
		life := map[string]any{"event": event}
		if event == "failed" {
			life["error"] = "the async subagent ended with status " + status
		}
		evs = append(evs, out{method: "lifecycle", ns: ns, data: life})
		switch event {
		case "completed":
			evs = append(evs, taskCallEnd(asyncLink{ns: ns, output: t.result}))
		case "failed":
			evs = append(evs, taskCallEnd(asyncLink{ns: ns, failure: life["error"].(string)}))
		}
	}
	return evs
}

// taskCallEnd is the end of a task's synthetic call.
func taskCallEnd(l asyncLink) out {
	callID := "async:" + l.ns[0][len("async_task:"):]
	if l.failure != "" {
		return out{method: "tools", ns: l.ns, data: map[string]any{"event": "tool-error", "tool_call_id": callID, "tool_name": "task", "message": l.failure}}
	}
	return out{method: "tools", ns: l.ns, data: map[string]any{"event": "tool-finished", "tool_call_id": callID, "tool_name": "task", "output": l.output}}
}

// asyncEnded records how a task's run ended and, when its call is
// announced, ends the call in the parent's stream. The task's feed lock
// is held.
func (h *Hub) asyncEnded(f *feed, run storage.Run, interrupts []any) {
	h.async.mu.Lock()
	l := h.async.links[f.threadID]
	if l == nil {
		h.async.mu.Unlock()
		return
	}
	l.ended = true
	switch {
	case run.Status == storage.RunSuccess && len(interrupts) == 0:
		l.output, l.failure = lastAIText(f.lastValues), ""
	case run.Status == storage.RunSuccess:
		l.failure = "the async subagent waits for input"
	default:
		l.failure = "the async subagent ended with status " + run.Status
	}
	link := *l
	h.async.mu.Unlock()
	if link.announced {
		h.publish(link.parent, taskCallEnd(link))
	}
}

// lastAIText is the text of the last AI message of a state's values.
func lastAIText(values any) any {
	v, _ := values.(map[string]any)
	msgs, _ := v["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["type"] == "ai" {
			return contentText(m["content"])
		}
	}
	return nil
}
