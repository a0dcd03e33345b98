// Package graph is the executor side of a run: the Runner interface the run
// engine drives every graph through, the Checkpoint type executors hand
// over and continue from, and the Go executor itself. (Package graphs, with
// an s, is the other thing: the registry of the graphs langgraph.json
// serves, with their schemas and drawings.)
//
// The Go executor runs graphs the way LangGraph's Pregel loop does: a
// run's input is recorded in an "input" checkpoint (the thread's values
// before it, with the virtual __start__ task pending) and applied by the
// __start__ step's "loop" checkpoint; then each super-step runs the
// scheduled nodes (concurrently when several), folds their updates into the
// state through the channel reducers, writes a checkpoint and decides the
// next nodes. A run stopped at any point can continue from its last
// checkpoint, whose Next lists what remains to run.
//
// Invariants:
//   - No executor touches storage: checkpoints go to the run's Sink, and a
//     run continues from the Checkpoint in its Input (Native carries a
//     worker's own serialized form through the engine unchanged).
//   - Exactly one checkpoint is written per super-step, the __start__ step
//     included, and one for the input; a checkpoint with a non-empty Next
//     is a resumable point. Every checkpoint of a run has the previous one
//     as its parent, so a thread's checkpoints form LangGraph's chain: a
//     run forked from an input checkpoint (editing the message it holds)
//     branches there.
//   - The Go executor's checkpoints before the first node (Executor.Begin,
//     Starter) depend only on the input and the checkpoint it starts from,
//     so the run engine may compute and store them before the run executes
//     and pass them back (Input.Begun).
//   - A step's checkpoint number (metadata.step) follows LangGraph's: an
//     empty thread's input checkpoint is step -1, its __start__ step 0.
//   - Node updates are applied in the order of the step's node list, so
//     results do not depend on goroutine scheduling.
//   - A checkpoint's Tasks parallel its Next; a task started by a Send keeps
//     the Send's input there, so a run paused before it resumes it with the
//     same input. End is never listed in Next.
//   - Cancellation is the context: a cancelled run stops at once, leaving
//     the last written checkpoint as its state.
//   - State values are immutable: nodes, reducers and middlewares build new
//     maps and lists instead of modifying what they were given, because a
//     state is shared by the step's nodes, the checkpoints already handed to
//     the sink, and the sink's encoder, which reuses the encoding of any
//     message object it has seen before.
package graph
