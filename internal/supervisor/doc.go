// Package supervisor is the agent middleware that lets a supervisor's model
// start, check, update, cancel and list async subagents (deepagents' five
// tools, with their names, argument names, schemas and strings), keeping
// the task records in a dedicated "async_tasks" state channel.
//
// Invariants:
//   - async_tasks is a map keyed by task id (the subagent's thread id),
//     merged per key by MergeTasks; no record is ever dropped, and
//     compaction, which rewrites only "messages", never touches it. It is
//     {} from the first checkpoint of a run on the thread (InitialValues),
//     never null.
//   - Tool failures are tool messages, never run errors.
//   - Fixed on purpose, unlike deepagents: list_async_tasks refreshes live
//     statuses before filtering (#5243); cancel_async_task records
//     "cancelled" only when the run was still live (#6234); a subagent
//     paused for human input is "interrupted" with its interrupt payload
//     (#3008); a task whose subagent type was renamed or removed gets a
//     clear message instead of a crash (#5640).
//   - Completions are pushed, not polled (Notifier): a finished run updates
//     its task record in the supervisor thread without any tool call.
//   - Cancelling or interrupting the supervisor run does not cancel its
//     tasks; they are independent by design.
package supervisor
