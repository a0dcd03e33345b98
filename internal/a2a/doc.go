// Package a2a speaks the Agent2Agent protocol (JSON-RPC over HTTP): it
// serves every assistant as an A2A agent at /a2a/{assistant_id}, with its
// agent card, and gives async subagents a transport to any A2A agent.
//
// Mapping (the same both ways):
//   - contextId is a thread id, a task id is a run id on that thread;
//   - a message without contextId starts a new thread, one with a
//     contextId runs on that thread (which must exist: contexts are made
//     by the server) and interrupts its current run;
//   - a run paused on an interrupt is the task state "input-required", and
//     the next message on its thread resumes it with the message's text;
//   - the answer (the thread's last message) is the task's artifact and
//     the text of its status message.
//
// Wire versions: the v0.3 method names (message/send, message/stream,
// tasks/get, tasks/cancel, tasks/resubscribe) answer in v0.3 shapes (kind
// fields, lower-case states); the v1.0 names (SendMessage,
// SendStreamingMessage, GetTask, CancelTask, ListTasks, SubscribeToTask)
// answer in v1.0 shapes (TASK_STATE_* states, wrapped stream events).
// tasks/list is accepted as a v0.3-shaped alias of ListTasks. The agent
// card carries the fields of both versions.
//
// Errors follow JSON-RPC 2.0 (codes and bounds of package jsonrpc): a body
// that is not JSON is a parse error; JSON that is not one request object
// (batches included: A2A defines none), or whose id is not a string, an
// integer or null, is an invalid request; params that are not an object,
// or a task call without its task id, are invalid params. An answer over
// jsonrpc.MaxAnswerBytes becomes an error.
package a2a
