package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The shared run queue (PostgreSQL only; see migrations/0002_run_queue.sql
// and doc.go "Replicas"). Every PutRun of an active run upserts its row in
// the same transaction, and every run that ends or is deleted loses it, so
// the queue and the run records never disagree.

// DefaultLease is how long a replica's hold on a running run lasts without
// renewal before another replica may take the run over.
const DefaultLease = 15 * time.Second

// ErrNotShared reports a run-queue operation on a database that is not
// shared between replicas (the embedded file).
var ErrNotShared = errors.New("the database is not shared between replicas")

// Notice is what one committed transaction tells the other replicas (and
// the committing one) through LISTEN/NOTIFY.
type Notice struct {
	// Ended lists runs that ended or were deleted.
	Ended []uuid.UUID `json:"e,omitempty"`
	// Started lists runs that a replica started.
	Started []uuid.UUID `json:"s,omitempty"`
	// Wake reports that a run became pending: idle replicas should look
	// for work.
	Wake bool `json:"w,omitempty"`
	// Cancel maps running runs to the cancellation requested for them.
	Cancel map[uuid.UUID]string `json:"c,omitempty"`
	// StoreVectors reports a change of store items' embedding vectors.
	StoreVectors bool `json:"v,omitempty"`
	// Origin identifies the open database (the process) that sent it.
	Origin string `json:"o,omitempty"`
	// Local is set on receipt when this process sent the notice.
	Local bool `json:"-"`
	// Resync is set (never sent) when the listener reconnected: notices
	// may have been missed, so everything waiting on one should look again.
	Resync bool `json:"-"`
}

func (n *Notice) empty() bool {
	return len(n.Ended) == 0 && len(n.Started) == 0 && !n.Wake && len(n.Cancel) == 0 && !n.StoreVectors
}

// maxNoticePayload keeps a notification under PostgreSQL's 8000-byte limit.
const maxNoticePayload = 7000

// payloads encodes the notice as one or more NOTIFY payloads.
func (n *Notice) payloads() []string {
	if n.empty() {
		return nil
	}
	raw, _ := json.Marshal(n)
	if len(raw) <= maxNoticePayload {
		return []string{string(raw)}
	}
	// Split the run lists; each id costs about 40 bytes.
	const per = maxNoticePayload / 48
	var out []string
	for i := 0; i < len(n.Ended) || i < len(n.Started) || i == 0; i += per {
		part := Notice{Ended: window(n.Ended, i, per), Started: window(n.Started, i, per)}
		if i == 0 {
			part.Wake, part.Cancel, part.StoreVectors = n.Wake, n.Cancel, n.StoreVectors
		}
		part.Origin = n.Origin
		raw, _ := json.Marshal(&part)
		out = append(out, string(raw))
	}
	return out
}

func window(ids []uuid.UUID, from, n int) []uuid.UUID {
	if from >= len(ids) {
		return nil
	}
	return ids[from:min(from+n, len(ids))]
}

// runQueue is a transaction of a backend with a shared run queue.
type runQueue interface {
	queueRun(r Run) error
	dequeueRun(id uuid.UUID) error
}

const (
	// pgQueueRunsSQL upserts the rows of several runs ($1–$6, $8: one
	// array per column); a running row's lease lasts $7 from now.
	pgQueueRunsSQL = `INSERT INTO run_queue (run_id, thread_id, status, not_before, owner, token, lease_until, pinned)
		SELECT r.id, r.th, r.st, r.nb, r.ow, r.tok, CASE WHEN r.st = 'running' THEN now() + $7::interval END, r.pin
		FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::timestamptz[], $5::text[], $6::bigint[], $8::text[])
			AS r(id, th, st, nb, ow, tok, pin)
		ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, not_before = excluded.not_before,
			owner = excluded.owner, token = excluded.token, lease_until = excluded.lease_until, pinned = excluded.pinned`
	pgDequeueRunsSQL = `DELETE FROM run_queue WHERE run_id = ANY($1::uuid[])`

	// pgClaimableSQL selects pending runs that may start now: due, the
	// oldest pending run of their thread, on a thread with nothing running,
	// and not pinned to another live replica.
	pgClaimableSQL = `SELECT q.run_id FROM run_queue q
		WHERE q.status = 'pending' AND q.not_before <= now()
			AND NOT EXISTS (SELECT 1 FROM run_queue o WHERE o.thread_id = q.thread_id
				AND (o.status = 'running' OR o.run_id < q.run_id))
			AND (q.pinned = '' OR q.pinned = $1 OR NOT EXISTS (SELECT 1 FROM replicas p
				WHERE p.id = q.pinned AND p.seen_at > now() - $3::interval))
		ORDER BY q.run_id LIMIT $2`
	pgClaimSQL   = pgClaimableSQL + ` FOR UPDATE OF q SKIP LOCKED`
	pgExpiredSQL = `SELECT run_id FROM run_queue WHERE status = 'running' AND lease_until < now()
		ORDER BY run_id LIMIT $1 FOR UPDATE SKIP LOCKED`
	pgOwnedSQL   = `SELECT run_id FROM run_queue WHERE status = 'running' AND owner = $1 ORDER BY run_id FOR UPDATE`
	pgNextDueSQL = `SELECT min(not_before) FROM run_queue WHERE status = 'pending' AND not_before > now()`
	pgPendingSQL = `SELECT count(*) FROM run_queue WHERE status = 'pending'`
	pgLapseSQL   = `SELECT min(lease_until) FROM run_queue WHERE status = 'running' AND owner <> $1`
	// pgRenewSQL extends the leases of the runs a replica holds and
	// executes ($3), skipping rows a writer transaction holds (a run of
	// this replica being ended or updated: waiting for it would stall
	// both), and returns every run the replica holds, renewed or not. A
	// run it holds but no longer executes (its end failed to commit) is
	// not renewed, so that its lease lapses and another replica takes it
	// over instead of it staying running for ever.
	pgRenewSQL = `WITH held AS (SELECT run_id FROM run_queue WHERE status = 'running' AND owner = $1),
		renewed AS (UPDATE run_queue SET lease_until = now() + $2::interval WHERE run_id IN (
			SELECT run_id FROM run_queue WHERE status = 'running' AND owner = $1 AND run_id = ANY($3::uuid[])
			FOR UPDATE SKIP LOCKED))
		SELECT run_id FROM held`
	pgHeartbeatSQL = `INSERT INTO replicas (id, url) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET url = excluded.url, seen_at = now()`
	pgForgetReplicasSQL = `DELETE FROM replicas WHERE seen_at < now() - $1::interval * 20`
	pgRunOwnerSQL       = `SELECT q.owner, coalesce(p.url, ''), coalesce(p.seen_at > now() - $2::interval, false)
		FROM run_queue q LEFT JOIN replicas p ON p.id = q.owner WHERE q.run_id = $1`
	pgLiveReplicasSQL = `SELECT id, url FROM replicas WHERE seen_at > now() - $1::interval ORDER BY id`
	pgReplicaAgeSQL   = `SELECT extract(epoch FROM now() - seen_at) FROM replicas WHERE id = $1`
)

func (t *pgTxn) queueRun(r Run) error {
	if !RunActive(r.Status) {
		return t.dequeueRun(r.RunID)
	}
	switch {
	case r.Status == RunPending:
		t.notice.Wake = true
	case r.CancelAction != "":
		if t.notice.Cancel == nil {
			t.notice.Cancel = map[uuid.UUID]string{}
		}
		t.notice.Cancel[r.RunID] = r.CancelAction
	default:
		t.notice.Started = append(t.notice.Started, r.RunID)
	}
	return t.queueRow(r.RunID, &r)
}

func (t *pgTxn) dequeueRun(id uuid.UUID) error {
	t.notice.Ended = append(t.notice.Ended, id)
	return t.queueRow(id, nil)
}

// queueRow records a run's queue row (nil: none) to write with the next
// batch (writeQueue), replacing what the transaction wrote for it before.
func (t *pgTxn) queueRow(id uuid.UUID, r *Run) error {
	if t.err != nil {
		return t.err
	}
	if t.readOnly {
		return errReadOnly
	}
	if t.queueRows == nil {
		t.queueRows = map[uuid.UUID]*Run{}
	}
	t.queueRows[id] = r
	t.writes++
	return nil
}

// writeQueue queues on b the net queue rows recorded since the last batch:
// one upsert of the rows and one delete of the runs that have none.
func (t *pgTxn) writeQueue(b *pgx.Batch) {
	if len(t.queueRows) == 0 {
		return
	}
	// pgtype.UUID: a uuid.UUID would be encoded through its text form.
	var ids, threads, gone []pgtype.UUID
	var status, owners, pinned []string
	var notBefore []time.Time
	var tokens []int64
	for id, r := range t.queueRows {
		if r == nil {
			gone = append(gone, pgUUID(id))
			continue
		}
		ids, threads, status = append(ids, pgUUID(id)), append(threads, pgUUID(r.ThreadID)), append(status, r.Status)
		notBefore, owners, tokens = append(notBefore, r.NotBefore), append(owners, r.Owner), append(tokens, int64(r.Token))
		pinned = append(pinned, r.Pinned)
	}
	clear(t.queueRows)
	if len(ids) > 0 {
		b.Queue(pgQueueRunsSQL, ids, threads, status, notBefore, owners, tokens, t.lease, pinned)
	}
	if len(gone) > 0 {
		b.Queue(pgDequeueRunsSQL, gone)
	}
}

// pgCollect runs a query returning one column in the transaction, after
// its pending writes, and returns the column's values.
func pgCollect[T any](t *pgTxn, sql string, args ...any) ([]T, error) {
	var out []T
	err := t.query(sql, args, func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowTo[T])
		return err
	})
	return out, err
}

// ids runs a query returning run ids (pgCollect).
func (t *pgTxn) ids(sql string, args ...any) ([]uuid.UUID, error) {
	return pgCollect[uuid.UUID](t, sql, args...)
}

// values runs a query returning one bytea column (pgCollect).
func (t *pgTxn) values(sql string, args ...any) ([][]byte, error) {
	return pgCollect[[]byte](t, sql, args...)
}

// shared returns the transaction's PostgreSQL side, or ErrNotShared.
func (t *Tx) shared() (*pgTxn, error) {
	p, ok := t.kv.(*pgTxn)
	if !ok {
		return nil, ErrNotShared
	}
	return p, nil
}

// ClaimableRuns locks up to n runs that replica may start now (see
// pgClaimableSQL), skipping rows other transactions hold, oldest first. The
// caller marks them running in the same transaction.
func (t *Tx) ClaimableRuns(replica string, n int) ([]uuid.UUID, error) {
	p, err := t.shared()
	if err != nil {
		return nil, err
	}
	return p.ids(pgClaimSQL, replica, n, p.lease)
}

// ExpiredRuns locks up to n running runs whose lease has lapsed.
func (t *Tx) ExpiredRuns(n int) ([]uuid.UUID, error) {
	p, err := t.shared()
	if err != nil {
		return nil, err
	}
	return p.ids(pgExpiredSQL, n)
}

// OwnedRuns locks the running runs a replica holds.
func (t *Tx) OwnedRuns(replica string) ([]uuid.UUID, error) {
	p, err := t.shared()
	if err != nil {
		return nil, err
	}
	return p.ids(pgOwnedSQL, replica)
}

// QueueState tells a replica how many runs are pending and, when a
// pending run is delayed (after_seconds), when the earliest becomes due.
func (db *DB) QueueState() (pending int, nextDue time.Time, err error) {
	pg, ok := db.be.(*pgBackend)
	if !ok {
		return 0, time.Time{}, ErrNotShared
	}
	ctx, cancel := pg.opCtx()
	defer cancel()
	if err := pg.pool.QueryRow(ctx, pgPendingSQL).Scan(&pending); err != nil || pending == 0 {
		return 0, time.Time{}, err
	}
	var due *time.Time
	if err := pg.pool.QueryRow(ctx, pgNextDueSQL).Scan(&due); err != nil {
		return pending, time.Time{}, err
	}
	if due != nil {
		nextDue = *due
	}
	return pending, nextDue, nil
}

// NextLapse returns when the earliest lease of a run that another replica
// holds lapses (ok false when there is none).
func (db *DB) NextLapse(replica string) (at time.Time, ok bool, err error) {
	pg, isPG := db.be.(*pgBackend)
	if !isPG {
		return time.Time{}, false, ErrNotShared
	}
	ctx, cancel := pg.opCtx()
	defer cancel()
	var lapse *time.Time
	if err := pg.pool.QueryRow(ctx, pgLapseSQL, replica).Scan(&lapse); err != nil || lapse == nil {
		return time.Time{}, false, err
	}
	return *lapse, true, nil
}

// RenewLeases extends the lease of every run the replica holds among
// executing (the runs it executes) and returns every run it holds: a run
// it executes that is not among them was taken over, and one it holds but
// does not execute is left to lapse. It does not wait for the writer lock.
func (db *DB) RenewLeases(replica string, executing []uuid.UUID) ([]uuid.UUID, error) {
	pg, ok := db.be.(*pgBackend)
	if !ok {
		return nil, ErrNotShared
	}
	ctx, cancel := pg.opCtx()
	defer cancel()
	ids := make([]pgtype.UUID, len(executing))
	for i, id := range executing {
		ids[i] = pgUUID(id)
	}
	rows, err := pg.pool.Query(ctx, pgRenewSQL, replica, pg.lease, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

// ErrReplicaStale reports a replica that the others no longer count as
// live: its heartbeat is older than a lease (its process was frozen, or
// could not reach the database), or it is not registered at all.
var ErrReplicaStale = errors.New("the replica is not live in the database")

// CheckReplica reports, reading the database, whether the replica counts
// as live for the others (ErrReplicaStale when not): its runs are then
// being taken over, and it should not be sent work until its next
// heartbeat.
func (db *DB) CheckReplica(replica string) error {
	pg, ok := db.be.(*pgBackend)
	if !ok {
		return ErrNotShared
	}
	ctx, cancel := pg.opCtx()
	defer cancel()
	var age float64
	err := pg.pool.QueryRow(ctx, pgReplicaAgeSQL, replica).Scan(&age)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("%w: replica %s is not registered", ErrReplicaStale, replica)
	case err != nil:
		return err
	}
	if seen := time.Duration(age * float64(time.Second)); seen >= pg.lease {
		return fmt.Errorf("%w: replica %s was last seen %s ago (the lease is %s)", ErrReplicaStale, replica, seen.Round(time.Millisecond), pg.lease)
	}
	return nil
}

// Heartbeat records that a replica is alive and reachable at url, and
// forgets replicas silent for twenty leases.
func (db *DB) Heartbeat(replica, url string) error {
	pg, ok := db.be.(*pgBackend)
	if !ok {
		return ErrNotShared
	}
	ctx, cancel := pg.opCtx()
	defer cancel()
	if _, err := pg.pool.Exec(ctx, pgHeartbeatSQL, replica, url); err != nil {
		return err
	}
	_, err := pg.pool.Exec(ctx, pgForgetReplicasSQL, pg.lease)
	return err
}

// Deregister removes a stopping replica from the live ones at once, so
// that the runs pinned to it need not wait for its heartbeat to age.
func (db *DB) Deregister(replica string) error {
	pg, ok := db.be.(*pgBackend)
	if !ok {
		return ErrNotShared
	}
	ctx, cancel := pg.opCtx()
	defer cancel()
	_, err := pg.pool.Exec(ctx, `DELETE FROM replicas WHERE id = $1`, replica)
	return err
}

// Replica is a server sharing the database.
type Replica struct {
	ID  string
	URL string
}

// LiveReplicas lists the replicas seen within one lease.
func (db *DB) LiveReplicas() ([]Replica, error) {
	pg, ok := db.be.(*pgBackend)
	if !ok {
		return nil, ErrNotShared
	}
	ctx, cancel := pg.opCtx()
	defer cancel()
	rows, err := pg.pool.Query(ctx, pgLiveReplicasSQL, pg.lease)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Replica, error) {
		var r Replica
		err := row.Scan(&r.ID, &r.URL)
		return r, err
	})
}

// RunOwner returns the replica executing a run and the URL it is reached
// at; ok is false when the run is not running or its replica is not alive.
func (db *DB) RunOwner(runID uuid.UUID) (owner Replica, ok bool, err error) {
	pg, isPG := db.be.(*pgBackend)
	if !isPG {
		return Replica{}, false, ErrNotShared
	}
	ctx, cancel := pg.opCtx()
	defer cancel()
	var alive bool
	err = pg.pool.QueryRow(ctx, pgRunOwnerSQL, runID, pg.lease).Scan(&owner.ID, &owner.URL, &alive)
	if errors.Is(err, pgx.ErrNoRows) {
		return Replica{}, false, nil
	}
	if err != nil {
		return Replica{}, false, fmt.Errorf("run owner: %w", err)
	}
	return owner, alive && owner.ID != "" && owner.URL != "", nil
}

// Shared reports whether several replicas may share the database
// (PostgreSQL).
func (db *DB) Shared() bool {
	_, ok := db.be.(*pgBackend)
	return ok
}

// Lease is how long a replica's hold on a running run lasts without
// renewal (0 on an embedded database).
func (db *DB) Lease() time.Duration {
	if pg, ok := db.be.(*pgBackend); ok {
		return pg.lease
	}
	return 0
}

// pgUUID is id as pgx encodes it without a detour through text.
func pgUUID(id uuid.UUID) pgtype.UUID {
	return pgtype.UUID{Bytes: id, Valid: true}
}
