// Package sse writes Server-Sent Events the way the LangGraph SDKs read them.
//
// # Invariants
//
//   - Nothing reaches the client before the first Start, Event, Comment,
//     Queue or Flush, so a handler can still answer with a JSON error after
//     NewWriter.
//   - Every frame is written with one Write: an event is "id: <id>\n" (only
//     when the id is not empty), "event: <name>\n" (only when the name is
//     not empty), "data: <data>\n" and a blank line. Event and Comment
//     flush at once; Queue leaves the frame for the next Flush.
//   - Pump flushes before every wait: an event is never held back waiting
//     for a later one. Events that are ready together go out in one flush,
//     at most 32 at a time.
//   - A frame holds exactly one event: names and ids lose their CR and LF
//     bytes (ids also NUL), and data is sent on one line when it is JSON
//     (compacted); other data is split at its line breaks into several data
//     lines, which the SDKs concatenate without a separator.
//   - Every write and flush has a deadline (DefaultWriteTimeout unless set):
//     a client that stops reading is dropped once its socket buffers are
//     full, instead of holding the connection and the buffers for good.
//   - Pump never starts a goroutine: it waits for the next event with a
//     context that expires when a heartbeat is due.
package sse
