// Package eventlog is the one append-only, sequence-numbered event log of
// the server. The run stream (package events), the thread stream of GET
// /threads/{id}/stream (package runs) and the thread-centric protocol
// stream (package protostream) each keep their events in a Log and read
// them through Cursors; what differs between them (persistence
// scheduling, how long a log lives, what an entry holds) is their owner's
// business.
//
// # Invariants
//
//   - Order: every entry carries a Seq larger than the previous entry's.
//     Append numbers an entry max(hint, last+1), where last starts at the
//     number New was given, so a log may continue another's numbering or
//     carry numbers chosen elsewhere (a clock, another replica).
//   - Entries never change once appended; memory is reclaimed only by
//     dropping the oldest entries (Options.Keep, Options.KeepBytes), and a
//     log that persists its entries never drops one that is not saved.
//   - Producers never block on consumers: Append takes the log's mutex
//     for a slice append and closes the wake channel, if a cursor made
//     one. The mutex is a leaf: no other lock is taken under it, so an
//     owner may append while holding its own locks.
//   - A Cursor is only a position in the log: a slow one lags, a vanished
//     one holds nothing but its own memory, and no goroutine exists per
//     cursor. A cursor whose next entries were dropped either continues
//     with the oldest kept entry or, when Options.ReportGaps is set, gets
//     ErrBehind until its owner has read the rest elsewhere and moved it on (MoveTo).
//   - Close ends the log: cursors receive the remaining entries and then
//     io.EOF; Reopen lets it grow again. Each Close has its own
//     generation, so that an owner can tell a later close from an earlier.
package eventlog
