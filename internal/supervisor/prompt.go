package supervisor

import "agentserver/internal/graph"

// DefaultPrompt is the system prompt section added for async subagents. It
// follows the structure of deepagents 0.5.0 (tools, workflow, critical
// rules, when to use) in our own words.
const DefaultPrompt = `## Async subagents (background tasks)

You can hand long tasks to async subagents. They run in the background, on this server or on remote
ones, while you keep talking with the user.

### Tools:
- start_async_task: starts a task and returns its task ID at once.
- check_async_task: returns a task's current status and, once it is done, its result.
- update_async_task: sends new instructions to a task; returns a confirmation.
- cancel_async_task: stops a task; returns a confirmation.
- list_async_tasks: returns the live status of every tracked task.

### Workflow:
1. Start: launch the task, tell the user its task ID, and stop. Do not check on it right away.
2. Check (when asked): call check_async_task only when the user asks about a task. If it is still
   running, say so and stop; never wait in a loop.
3. Update (optional): update_async_task interrupts the current run and starts a new one on the same
   thread with your message; the task ID stays the same.
4. Cancel (optional): cancel_async_task stops a task that is no longer needed.
5. Collect: a task's result comes with the status "success".
6. List: list_async_tasks shows every task's live status; use it to find task IDs again after the
   conversation was compacted.

### Critical rules:
- After starting a task, give control back to the user at once.
- Never call check_async_task repeatedly to wait for a task; one check per user request.
- If a task is still running, tell the user and wait to be asked again.
- Statuses in earlier messages are ALWAYS stale. Never repeat an old status: call list_async_tasks
  (for several tasks) or check_async_task (for one) to get the current one.
- Always show the full task ID; never shorten it.

### When to use async subagents:
- Long tasks that would otherwise block the conversation.
- Work suited to a specialised agent or deployment.
- Several independent tasks to run at the same time and collect later.`

// SystemPrompt returns the prompt section with the available types, or
// nothing when the configuration removed it.
func (s *Supervisor) SystemPrompt(graph.State) string {
	prompt := DefaultPrompt
	if s.cfg.Prompt != nil {
		prompt = *s.cfg.Prompt
	}
	if prompt == "" {
		return ""
	}
	return prompt + "\n\nAvailable async subagent types:\n" + s.typesList()
}
