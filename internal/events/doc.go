// Package events holds the stream events of runs: one append-only Log per run,
// read by any number of Subscriptions, and a Broker that owns the logs,
// persists those of resumable runs and forgets them after a retention period.
// A Log is an eventlog.Log of Events (numbering, cursors, wake-ups) plus what
// the Broker needs; a Subscription is an eventlog.Cursor.
//
// # Invariants
//
//   - Order: the events of a run carry Seq 1, 2, 3, … (strictly increasing;
//     a run re-opened after a restart continues after its last persisted Seq).
//     Every subscriber sees a suffix of that sequence, in order, without gaps
//     or duplicates. Subscribe(after) starts at the first event with
//     Seq > after, so an SSE Last-Event-ID of "-1" or "0" replays everything.
//   - Producers never block on consumers: Log.Append takes the eventlog's
//     mutex for a slice append and closes a channel; it never waits for a
//     subscriber, for the store or for the Broker's loop. A subscriber is only a cursor into the
//     log: a slow one just lags, a vanished one holds nothing that needs
//     releasing beyond its own memory, and no goroutine exists per subscriber.
//   - Event.Data is valid, compact, one-line JSON: Append compacts data that
//     spans lines and turns bytes that are not JSON into a JSON string.
//   - Persistence is batched: Append only marks a resumable log dirty. The
//     Broker's loop writes the events appended since the last write of every
//     dirty log once per FlushInterval, all logs concurrently so that the
//     storage group commit folds them into about one transaction; a log that
//     closes is written at once. The write rate is therefore bounded by the
//     flush interval, not by the token rate. Events appended within the last
//     FlushInterval before a crash can be lost; non-resumable logs are never
//     written.
//   - Retention: a closed log stays in memory for MemoryRetention (a
//     resumable one only once all its events are persisted); afterwards a
//     resumable run is replayed from the store. Retention after the close, the
//     log leaves memory and its persisted events are deleted. Events persisted
//     by an earlier process are deleted Retention after Broker.Run starts,
//     unless the run is opened again.
//   - Ownership: Broker.Run is the only goroutine the package starts (plus
//     short-lived flush workers that Run or Flush waits for). Run returns
//     after a final flush once its context is cancelled; stop it before
//     closing the store.
package events
