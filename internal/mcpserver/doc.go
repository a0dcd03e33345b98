// Package mcpserver serves this server's assistants over the Model Context
// Protocol (streamable HTTP, stateless) at /mcp: every assistant is a tool
// that runs it to completion, and five task tools start, check, update,
// cancel and list assistants running in the background, so any MCP client
// can use them as async subagents.
//
// Invariants:
//   - The tool list is built per request from the assistants stored now, so
//     an assistant created through the API is a tool at once.
//   - An assistant tool's run is stateless (a temporary thread); when the
//     client cancels the call or goes away, the run is cancelled.
//   - A background task is a thread tagged with the metadata key
//     "mcp_async_task"; its id is the thread id, its status that of the
//     thread's latest run (a run paused on an interrupt is "interrupted").
//   - Tool failures are tool results with isError set, never protocol
//     errors, except for an unknown tool.
//   - A batch of more than jsonrpc.MaxBatch calls is refused whole before
//     any call runs, and an answer over jsonrpc.MaxAnswerBytes leaves as an
//     error (package jsonrpc).
package mcpserver
