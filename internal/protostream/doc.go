// Package protostream serves the thread-centric streaming protocol (the
// "v2" protocol of @langchain/langgraph-sdk 1.15's ThreadStream): one
// stream of events per thread, across all its runs, filtered per
// connection by channel, namespace and depth.
//
// A Hub observes the run engine (runs.ThreadObserver). For a thread it
// follows, it translates each run event into protocol events (messages as
// message-start / content-block-* / message-finish, tool calls as
// tool-started / tool-output-delta / tool-finished / tool-error, run and
// subagent status as lifecycle, interrupts as input.requested) and
// numbers them in the thread's feed, an eventlog.Log whose cursors are the
// connections.
//
// # Invariants
//
//   - Seq: the events of a thread carry strictly increasing Seq numbers,
//     assigned before any filtering, so that every connection can resume
//     with `since` (or Last-Event-ID) whatever filter it used. A feed
//     opened again (after its retention or a restart) continues after the
//     last stored Seq; a thread without stored events starts from the
//     clock (µs), above any number an earlier feed could have used.
//   - Replay: every event is kept in memory (bounded) and persisted in
//     batches (storage thread_events) for Options.Retention. A resume
//     from a Seq older than anything kept is reported to the client as an
//     error frame naming the missed range, never silently skipped.
//     Events published within the last FlushInterval before a crash may
//     be lost; events still unsaved are never dropped from memory.
//   - Producers never block: publishing appends to the feed's log, which
//     closes a wake channel. A subscriber is a cursor; a slow one lags and
//     falls back to the store (eventlog.ErrBehind), a vanished one holds
//     nothing.
//   - A thread is followed while it has connections, and for
//     Options.Retention after its last connection left or its last event
//     was published; runs of other threads pay one atomic load per event.
//   - Ownership: Hub.Run is the only long-lived goroutine of the package
//     (flushes and sweeps, plus short-lived flush workers it waits for);
//     stop it before closing the store.
//   - Lock order: a task thread's feed, then its parent's feed (mirroring
//     goes from task to parent, never back), then the hub's table of async
//     tasks; the hub's map lock may be read under a feed lock, so the sweep
//     only try-locks feeds. A feed's log lock is a leaf, taken last.
package protostream
