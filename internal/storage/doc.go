// Package storage owns the database: every bucket, key encoding and index of
// the server lives here, and no other package imports bbolt or the
// PostgreSQL driver.
//
// # Backends and the key-value seam
//
// The record accessors (Tx methods) read and write ordered buckets through
// t.bucket(name), a kvBucket (Get, Put, Delete, ForEach, Cursor) whose
// cursors (First, Last, Seek, Next, Prev, Delete) are kvCursors. The names
// and signatures are bbolt's. Two backends implement the seam:
//
//   - bbolt (Open, the default): one file, <data-dir>/agentserver.db; the
//     seam is bbolt's own buckets and cursors.
//   - PostgreSQL (OpenPostgres, --database-url): a table per record
//     bucket (assistants, assistant_versions, threads, checkpoints,
//     nested_checkpoints, runs, crons, store_items: the record's key k as
//     primary key, its value v, and typed columns the writes derive from
//     both; pgrelations.go) and the table kv(bucket, k, v) for the other
//     buckets (meta, the index entries), created by the embedded
//     migrations (migrations/NNNN_name.sql, applied in one transaction at
//     open and recorded in schema_migrations). Within a read-write
//     transaction, Put and Delete are queued and sent as one pipelined batch
//     before the next read and at commit; cursors fetch pages of rows that
//     grow from a few to 64. Write transactions run READ COMMITTED and
//     take no lock on the whole schema: several replicas' writers commit
//     side by side (see "Concurrent writers"). Reads run in a
//     REPEATABLE READ READ ONLY transaction.
//
// # Concurrent writers (PostgreSQL)
//
// Row locks keep the invariants that a single writer kept by running
// alone:
//
//   - Every point read of a write transaction (Get, and the keys of a
//     prefetch) locks its row, FOR UPDATE, until the transaction ends. The
//     record code changes a record by reading it and writing it back, so
//     writers of one record take turns and the second reads what the first
//     committed, while writers of different records never wait for each
//     other. Per thread this serializes run creation, start and end (each
//     reads the thread's record and its runs' active entries), and the
//     fencing check (RunHeldBy reads the run's active entry, which a
//     takeover writes). Cursor reads lock nothing: what a transaction
//     decides from a scan is covered by a record it read first.
//   - A key read as absent and then put is written with a plain INSERT
//     (pgOverlay's serverAbsent): when another transaction inserted it
//     meanwhile, the insert fails on the table's primary key and the
//     writer tries the
//     whole transaction again, which then reads the row.
//   - Deadlocks (two batches locking rows of the same threads in opposite
//     orders) are aborted by PostgreSQL and tried again.
//
// # Replicas (PostgreSQL)
//
// Besides those tables, the schema has run_queue (one row per pending or running
// run, written by PutRun and deleteRunKeys in the run's own transaction:
// status, due date, owner replica, fencing token, lease) and replicas
// (each live server's id, URL and last heartbeat); see
// migrations/0002_run_queue.sql and runqueue.go. Every write transaction
// collects a Notice of what it did to runs (became pending, started,
// ended, cancellation requested) and to store vectors, and sends it with
// pg_notify right after its COMMIT, in the same round trip, so listeners
// (OnNotice) hear of committed changes only. Not inside the transaction:
// PostgreSQL holds one database-wide lock from a notifying transaction's
// commit to its end, which would make every replica's commits wait for
// each other. The notice channel is named after the schema.
//
// Faults (PostgreSQL). Every write transaction sets, for itself,
// idle_in_transaction_session_timeout (writerIdleTimeout, 500 ms): a
// process frozen in the middle of a write transaction (SIGSTOP, a VM
// pause, a long stall) is cut off by PostgreSQL within that time and its
// row locks released, instead of the writers of the same rows waiting for
// the whole freeze. The writer tries a transaction again on a new connection (up to
// pgWriteAttempts, the idle timeout growing with each try) when it did not
// commit for a reason a new try removes: its session was lost or ended
// (that timeout, pg_terminate_backend), a serialization failure, a
// deadlock. An error the server answered means the transaction did not
// commit. A session lost while COMMIT is in flight is ambiguous: the
// transaction's id, read in its first round trip, and pg_xact_status
// decide — committed is a success, aborted is tried again, anything else
// is an error. So a batch commits once or not at all, and success is
// reported only for a commit. A replica whose heartbeat (replicas.seen_at)
// is older than a lease is not live (CheckReplica): its runs are being
// taken over, and its health check fails until it beats again. Leases are
// renewed only for the runs the replica still executes (RenewLeases).
//
// One table rather than a table per bucket: the code above the seam creates
// no bucket at run time, every bucket has the same shape (ordered bytes to
// bytes), and a new bucket then needs no migration.
//
// Invariants of the seam, which every backend keeps:
//
//   - Keys compare as unsigned bytes, shorter prefix first (bbolt's order,
//     and PostgreSQL's bytea order).
//   - Get returns nil for an absent key and a non-nil (possibly empty) slice
//     for a present one; callers test presence with != nil.
//   - A transaction reads its own writes. After writing, reposition a
//     cursor with First, Last or Seek (bbolt's rule); the PostgreSQL cursor
//     also refetches by itself from its position.
//   - A read that fails (PostgreSQL only: bbolt reads memory) returns nil,
//     and the transaction then fails with that error: View returns it, and a
//     batch of Update fails as a whole with it instead of blaming a member.
//   - Slices returned by reads are valid only inside the transaction (bbolt
//     maps them from the file); the record code copies what it keeps.
//
// # Durability
//
// Every write commits durably before it is acknowledged: with an fsync on
// bbolt (its default), with a synchronous commit on PostgreSQL, so a write
// that returned success survives a crash (kill -9). Concurrent writers are
// coalesced by a single writer goroutine into one transaction per batch
// ("group commit"): while one batch is being committed the next one
// accumulates, so throughput grows with concurrency instead of stopping at
// one fsync per request, and a lone writer pays no batching delay. The
// writer has two lanes: small writes (Update, Submit), all of which a
// batch takes, and bulk writes (the chunks of a large store value,
// StageStoreValue), of which a batch takes at most maxBulkBatchBytes, so
// that a commit a small write joins or waits for stays short however
// large the values being written.
//
// # Bucket tree
//
//	meta                      "schema_version" -> decimal text
//	assistants                assistant_id(16) -> Assistant JSON (the current version)
//	assistant_versions        assistant_id(16) | version(4, big endian) -> Assistant JSON;
//	                          versions are immutable: PutAssistantVersion refuses to overwrite (ErrConflict)
//	threads                   thread_id(16) -> Thread JSON (values are NOT stored here)
//	(the next three only on bbolt: PostgreSQL searches the threads table, pgthreads.go)
//	threads_by_created        created_at(8, unix nanos, big endian) | thread_id(16) -> empty
//	threads_by_meta           key | 0x00 | canonical JSON of value | 0x00 | created_at(8) | thread_id(16) -> empty
//	threads_by_status         status | 0x00 | created_at(8) | thread_id(16) -> empty
//	threads_by_expiry         expires_at(8, unix nanos) | thread_id(16) -> empty, for every thread
//	                          with a TTL; expires_at = updated_at + ttl minutes (see Thread.ExpiresAt)
//	checkpoints               thread_id(16) | checkpoint_id(16) -> Checkpoint JSON (a thread's own graph)
//	nested_checkpoints        thread_id(16) | checkpoint_ns | 0x00 | checkpoint_id(16) -> Checkpoint JSON:
//	                          the checkpoints of nested graphs (subgraphs of a graph worker's graph,
//	                          checkpoint_ns "node:task_id", "outer:task|inner:task"); deleted with the
//	                          thread, with a rolled-back run, and by keep_latest (but the newest of
//	                          each namespace)
//	runs                      run_id(16) -> Run JSON
//	runs_by_thread            thread_id(16) | run_id(16) -> empty
//	runs_active               run_id(16) -> empty, for every pending or running run
//	run_events                run_id(16) | seq(8, big endian) -> {"event": name, "data": json} (resumable runs only;
//	                          on PostgreSQL the table run_events(run_id, seq, v) instead: seqlog.go)
//	store_items               namespace labels joined by 0x1f | 0x00 | key -> StoreItem JSON with
//	                          "value" last (records of earlier builds have it first), or, for a
//	                          value over 256 KiB, "value_blob" {id, chunks, size} naming its chunks
//	store_blobs               value id(16) | chunk index(4, big endian) -> 256 KiB of the encoded
//	                          value (the last chunk shorter); deleted with the item that names them
//	store_staged              value id(16) -> time of its last chunk (8, unix nanos): a value staged
//	                          for a put whose item is not stored yet; swept after StagedStoreValueGrace
//	store_expiry              expires_at(8, unix nanos) | item key -> empty (bbolt only: PostgreSQL
//	                          finds expired items through store_items' index on expires_at)
//	store_vectors             item key -> count(4) | dims(4) | count×dims float32 (little endian):
//	                          the embeddings of an item's indexed fields (semantic search); written
//	                          and deleted with the item, scored in process (cosine)
//	subagents                 parent run_id(16) | tool_call_id -> SubagentExecution JSON (synchronous task tool;
//	                          on PostgreSQL the table subagents(run_id, tool_call_id, thread_id, status,
//	                          started_at, ended_at, v) instead: subagents.go)
//	thread_events             thread_id(16) | seq(8, big endian) -> {"at": unix millis, "event": protocol event JSON}
//	                          (thread-centric stream replay buffer; deleted after its retention; on
//	                          PostgreSQL the table thread_events(thread_id, seq, at, v) instead)
//	crons                     cron_id(16) -> Cron JSON
//	crons_by_due              next_run_date(8, unix nanos) | cron_id(16) -> empty, for every enabled
//	                          cron with a next firing
//	crons_by_thread           thread_id(16) | cron_id(16) -> empty, for every cron bound to a thread;
//	                          deleting a thread deletes its crons in the same transaction
//
// Store namespace labels are non-empty and contain neither 0x00 nor 0x1f, so
// an item key is unambiguous: the items of namespace N are exactly
// enc(N)|0x00…, the namespaces below N are enc(N)|0x1f…, and an item is
// expired when now ≥ expires_at. An expired item is invisible to readers
// before the sweeper deletes it.
//
// UUIDs are stored as their 16 raw bytes. Identifiers the server mints are
// UUIDv7, and checkpoint ids UUIDv6 (as LangGraph's), so byte order is
// creation order: a cursor over checkpoints of one thread walks them oldest
// to newest.
//
// # Invariants
//
//   - A secondary index entry exists if and only if its primary record exists
//     and carries the indexed value; indexes are written in the same
//     transaction as the record they index.
//   - A thread's values are the values of its newest checkpoint; there is no
//     second copy.
//   - Values returned from a transaction are decoded copies: nothing returned
//     by this package aliases a backend's memory (bbolt's memory map).
//   - Writes of one lane commit in the order they were queued (Update,
//     Submit): a write queued after another sees its effects and is durable
//     only after it. A bulk write may commit after small writes queued
//     later: what it stores (a staged chunk) is reachable only through a
//     record a small write stores once the chunks have committed.
//   - An update writes only the index entries that change, so that it
//     dirties (and syncs) no page it does not need to.
//   - Transactions are short: no network, no model calls and no channel waits
//     happen inside them. Work that must follow a commit is registered with
//     Tx.AfterCommit and runs once the batch is durable.
//   - The work one write does inside the single writer is bounded, so that a
//     large write does not hold up the small ones queued behind it: a
//     thread's metadata has at most MaxThreadMetadataKeys keys (each is an
//     index entry; index changes are computed in linear time), a store
//     value is encoded before the transaction (PrepareStoreItem), one over
//     256 KiB is written ahead in chunks on the bulk lane (StageStoreValue),
//     and the copy it replaces is read only as far as its dates (its value
//     comes last).
//   - A pending or running run whose record no longer decodes (an earlier
//     build accepted input nested deeper than the decoder reads back) is
//     rewritten at start-up as an error run from its readable top-level
//     fields (FailUnreadableActiveRuns), so that one bad record cannot keep
//     the server from starting.
//   - The schema version ("meta" bucket) is checked at open on both
//     backends: a database written by a newer schema is refused rather than
//     misread. On PostgreSQL, a newer migration in schema_migrations is
//     refused too.
package storage
