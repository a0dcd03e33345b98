// Package storage owns the embedded bbolt database: every bucket, key encoding
// and index of the server lives here, and no other package imports bbolt.
//
// # Files and durability
//
// The database is one file, <data-dir>/agentserver.db. Every write commits with
// an fsync (bbolt's default), so a write that returned success survives a crash
// (kill -9). Concurrent writers are coalesced by a single writer goroutine into
// one bbolt transaction per batch ("group commit"): while one batch is being
// fsynced the next one accumulates, so throughput grows with concurrency
// instead of stopping at one fsync per request, and a lone writer pays no
// batching delay.
//
// # Bucket tree
//
//	meta                      "schema_version" -> decimal text
//	assistants                assistant_id(16) -> Assistant JSON (the current version)
//	assistant_versions        assistant_id(16) | version(4, big endian) -> Assistant JSON;
//	                          versions are immutable: PutAssistantVersion refuses to overwrite (ErrConflict)
//	threads                   thread_id(16) -> Thread JSON (values are NOT stored here)
//	threads_by_created        created_at(8, unix nanos, big endian) | thread_id(16) -> empty
//	threads_by_meta           key | 0x00 | canonical JSON of value | 0x00 | created_at(8) | thread_id(16) -> empty
//	threads_by_status         status | 0x00 | created_at(8) | thread_id(16) -> empty
//	threads_by_expiry         expires_at(8, unix nanos) | thread_id(16) -> empty, for every thread
//	                          with a TTL; expires_at = updated_at + ttl minutes (see Thread.ExpiresAt)
//	checkpoints               thread_id(16) | checkpoint_id(16) -> Checkpoint JSON
//	runs                      run_id(16) -> Run JSON
//	runs_by_thread            thread_id(16) | run_id(16) -> empty
//	runs_active               run_id(16) -> empty, for every pending or running run
//	run_events                run_id(16) | seq(8, big endian) -> {"event": name, "data": json} (resumable runs only)
//	store_items               namespace labels joined by 0x1f | 0x00 | key -> StoreItem JSON
//	store_expiry              expires_at(8, unix nanos) | item key -> empty
//	subagents                 parent run_id(16) | tool_call_id -> SubagentExecution JSON (synchronous task tool)
//	thread_events             thread_id(16) | seq(8, big endian) -> {"at": unix millis, "event": protocol event JSON}
//	                          (thread-centric stream replay buffer; deleted after its retention)
//
// Store namespace labels are non-empty and contain neither 0x00 nor 0x1f, so
// an item key is unambiguous: the items of namespace N are exactly
// enc(N)|0x00…, the namespaces below N are enc(N)|0x1f…, and an item is
// expired when now ≥ expires_at. An expired item is invisible to readers
// before the sweeper deletes it.
//
// UUIDs are stored as their 16 raw bytes. Identifiers the server mints are
// UUIDv7, so byte order is creation order: a cursor over checkpoints of one
// thread walks them oldest to newest.
//
// # Invariants
//
//   - A secondary index entry exists if and only if its primary record exists
//     and carries the indexed value; indexes are written in the same
//     transaction as the record they index.
//   - A thread's values are the values of its newest checkpoint; there is no
//     second copy.
//   - Values returned from a transaction are decoded copies: nothing returned
//     by this package aliases bbolt's memory map.
//   - Writes commit in the order they were queued (Update, Submit): a write
//     queued after another sees its effects and is durable only after it.
//   - An update writes only the index entries that change, so that it
//     dirties (and syncs) no page it does not need to.
//   - Transactions are short: no network, no model calls and no channel waits
//     happen inside them. Work that must follow a commit is registered with
//     Tx.AfterCommit and runs once the batch is durable.
//   - The work one write does inside the single writer is bounded, so that a
//     large write does not hold up the small ones queued behind it: a
//     thread's metadata has at most MaxThreadMetadataKeys keys (each is an
//     index entry; index changes are computed in linear time), a store
//     value is encoded before the transaction (PrepareStoreItem), and the
//     copy it replaces is not decoded into maps.
//   - A pending or running run whose record no longer decodes (an earlier
//     build accepted input nested deeper than the decoder reads back) is
//     rewritten at start-up as an error run from its readable top-level
//     fields (FailUnreadableActiveRuns), so that one bad record cannot keep
//     the server from starting.
//   - The schema version is checked at Open: a file written by a newer schema
//     is refused rather than misread.
package storage
