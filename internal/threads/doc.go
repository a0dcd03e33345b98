// Package threads manages threads and their state: creation, metadata,
// search, copies, checkpoints, state reads and updates, and history.
//
// Invariants:
//   - A thread's values are those of its newest checkpoint; every state
//     change writes a new checkpoint (source "input" for the first superstep
//     of a creation, "update" for client writes, "loop" for run steps).
//   - State updates go through the channel reducers (package channels), so a
//     "messages" update appends or replaces by id, and other keys overwrite
//     unless a reducer is registered for them.
//   - A busy thread (one with a pending or running run) refuses state updates
//     with a conflict.
//   - Each operation is one storage transaction: a failed update changes
//     nothing.
package threads
