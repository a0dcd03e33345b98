// Package threads manages threads and their state: creation, metadata,
// search, copies, checkpoints, state reads and updates, and history.
//
// Invariants:
//   - A thread's values are those of its newest checkpoint; every state
//     change writes a new checkpoint (source "input" for the first superstep
//     of a creation, "update" for client writes, "loop" for run steps).
//   - State updates go through the channel reducers (package channels), so a
//     "messages" update appends or replaces by id, and other keys overwrite
//     unless a reducer is registered for them. The exception is a thread
//     whose checkpoint a graph worker wrote (it has a native form): its
//     graph applies the update (graph.StateUpdater, outside any
//     transaction), and the checkpoints it wrote are stored in a second
//     transaction only if the thread is still idle with the same newest
//     checkpoint (otherwise a conflict, nothing written).
//   - A busy thread (one with a pending or running run) refuses state updates
//     with a conflict.
//   - Each operation is one storage transaction: a failed update changes
//     nothing.
//   - A thread's TTL ({ttl: minutes, strategy}) runs out ttl minutes after
//     its updated_at, so every write that moves updated_at restarts it.
//     The sweeper (RunSweeper, SweepExpired) and Prune never touch a thread
//     with a pending or running run: the check and the delete or prune are
//     one transaction, so a run created concurrently either is seen or
//     finds the thread gone.
//   - keep_latest keeps exactly the newest checkpoint and moves updated_at
//     to the prune time.
package threads
