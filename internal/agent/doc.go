// Package agent turns an agent spec (YAML or JSON) into a graph that the
// run engine executes: a "model" node that calls the chat model and a
// "tools" node that runs the tool calls it asked for, looping until the
// model answers without tools or max_turns model calls were made.
//
// Middlewares extend the loop through small hook interfaces (tools, prompt
// sections, state channels, before/around/after the model call, before the
// tool batch, around each tool call). The built-in ones are compaction
// (summarise old messages past a token threshold, never splitting a tool
// call from its result, touching no other channel) and human-in-the-loop
// approvals (interrupt_on).
//
// Invariants:
//   - Messages in state are LangChain-serialized maps in generic JSON form.
//   - Every tool call of an AI message gets exactly one tool message, even
//     when it fails, is rejected, or names an unknown tool. A call a thread
//     left unanswered (a run paused for approval and then ended with
//     command goto __end__, or an edited state) is answered in the model's
//     request, not in the state (answerDangling).
//   - A tool error never fails the run; it is the tool message's text.
//   - Every tool call that runs reports on the "tools" stream mode: one
//     on_tool_start, an on_tool_event per progress payload, then exactly one
//     on_tool_end or on_tool_error (none when the run was cancelled).
package agent
