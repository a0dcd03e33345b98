package storage

import (
	"bytes"
	"fmt"
	"sort"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/jsonx"
)

// Cron is the stored form of a cron job: a run payload created on a
// schedule, on its thread or (ThreadID nil) on a new thread each time.
type Cron struct {
	CronID      uuid.UUID  `json:"cron_id"`
	AssistantID uuid.UUID  `json:"assistant_id"`
	ThreadID    *uuid.UUID `json:"thread_id"`
	Schedule    string     `json:"schedule"`
	// Timezone is the IANA zone the schedule is read in; empty means UTC.
	Timezone string     `json:"timezone,omitempty"`
	EndTime  *time.Time `json:"end_time,omitempty"`
	Enabled  bool       `json:"enabled"`
	// OnRunCompleted is delete or keep: what happens to the thread of a
	// stateless cron's run when it ends.
	OnRunCompleted string `json:"on_run_completed,omitempty"`
	// Payload is the run body as the client sent it (reported back).
	Payload map[string]any `json:"payload"`
	// Params is the run's creation parameters, checked at creation; the
	// run engine's own encoding, opaque here.
	Params   []byte         `json:"params"`
	Metadata map[string]any `json:"metadata"`
	// NextRunDate is the next firing; nil when the cron will not fire
	// again (its end_time passed).
	NextRunDate *time.Time `json:"next_run_date,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	// User is the per-user caller who created the cron, in the form runs
	// see it (langgraph_auth_user); its firings run as that user. Nil for
	// a cron made by the operator or without per-user auth.
	User map[string]any `json:"user,omitempty"`
}

// On PostgreSQL the due crons are found through the index crons_due of
// the crons table (migration 6), kept by PostgreSQL; crons_by_due is the
// embedded backend's index.
const (
	pgDueCronsSQL = `SELECT cron_id FROM crons WHERE enabled AND next_run_date <= $1
		ORDER BY next_run_date, cron_id LIMIT $2`
	pgNextCronDueSQL = `SELECT next_run_date FROM crons WHERE enabled AND next_run_date IS NOT NULL
		ORDER BY next_run_date, cron_id LIMIT 1`
)

// dueKey is the cron's crons_by_due key, or nil when it is not due ever
// (disabled, or no next firing) or the backend keeps no such index.
func (t *Tx) dueKey(c *Cron) []byte {
	if _, pg := t.kv.(*pgTxn); pg || !c.Enabled || c.NextRunDate == nil {
		return nil
	}
	return timeIDKey(nil, *c.NextRunDate, c.CronID)
}

// GetCron returns a cron, or ErrNotFound.
func (t *Tx) GetCron(id uuid.UUID) (Cron, error) {
	var c Cron
	raw := t.bucket(bucketCrons).Get(id[:])
	if raw == nil {
		return c, fmt.Errorf("cron %s: %w", id, ErrNotFound)
	}
	err := decode(raw, &c)
	return c, err
}

// PutCron creates or replaces a cron and keeps its indexes in step.
func (t *Tx) PutCron(c Cron) error {
	var oldDue []byte
	if old, err := t.GetCron(c.CronID); err == nil {
		oldDue = t.dueKey(&old)
	}
	raw, err := encode(c)
	if err != nil {
		return err
	}
	if err := t.bucket(bucketCrons).Put(idKey(c.CronID), raw); err != nil {
		return err
	}
	if c.ThreadID != nil {
		if err := t.bucket(bucketCronsByThread).Put(pairKey(*c.ThreadID, c.CronID), nil); err != nil {
			return err
		}
	}
	newDue := t.dueKey(&c)
	if bytes.Equal(oldDue, newDue) {
		return nil
	}
	due := t.bucket(bucketCronsByDue)
	if oldDue != nil {
		if err := due.Delete(oldDue); err != nil {
			return err
		}
	}
	if newDue == nil {
		return nil
	}
	return due.Put(newDue, nil)
}

// DeleteCron removes a cron and its index entries, or returns ErrNotFound.
func (t *Tx) DeleteCron(id uuid.UUID) error {
	c, err := t.GetCron(id)
	if err != nil {
		return err
	}
	if k := t.dueKey(&c); k != nil {
		if err := t.bucket(bucketCronsByDue).Delete(k); err != nil {
			return err
		}
	}
	if c.ThreadID != nil {
		if err := t.bucket(bucketCronsByThread).Delete(pairKey(*c.ThreadID, id)); err != nil {
			return err
		}
	}
	return t.bucket(bucketCrons).Delete(id[:])
}

// deleteThreadCrons removes every cron of a thread.
func (t *Tx) deleteThreadCrons(threadID uuid.UUID) error {
	ids, err := threadIndexIDs(t.bucket(bucketCronsByThread), threadID)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := t.DeleteCron(id); err != nil {
			return err
		}
	}
	return nil
}

// DueCrons returns up to limit ids of enabled crons whose next firing is
// at or before now, the earliest first.
func (t *Tx) DueCrons(now time.Time, limit int) []uuid.UUID {
	if p, ok := t.kv.(*pgTxn); ok {
		ids, _ := p.ids(pgDueCronsSQL, now, limit) // a failure fails the transaction
		return ids
	}
	var out []uuid.UUID
	end := timeIDKey(nil, now, uuid.Max)
	c := t.bucket(bucketCronsByDue).Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, end) <= 0 && len(out) < limit; k, _ = c.Next() {
		_, id := splitTimeID(k)
		out = append(out, id)
	}
	return out
}

// NextCronDue returns the earliest next firing of any enabled cron, or
// false when none will fire.
func (t *Tx) NextCronDue() (time.Time, bool) {
	if p, ok := t.kv.(*pgTxn); ok {
		next, err := pgCollect[time.Time](p, pgNextCronDueSQL)
		if err != nil || len(next) == 0 {
			return time.Time{}, false // a failure fails the transaction
		}
		return next[0], true
	}
	k, _ := t.bucket(bucketCronsByDue).Cursor().First()
	if k == nil {
		return time.Time{}, false
	}
	at, _ := splitTimeID(k)
	return at, true
}

// CronCount returns how many crons are stored.
func (t *Tx) CronCount() int {
	return t.countKeys(bucketCrons)
}

// GetCronWhere returns a cron whose metadata contains restrict (nil: any
// cron), else ErrNotFound, exactly as for one that does not exist.
func (t *Tx) GetCronWhere(id uuid.UUID, restrict map[string]any) (Cron, error) {
	c, err := t.GetCron(id)
	if err == nil && len(restrict) > 0 && !jsonx.Contains(c.Metadata, restrict) {
		return Cron{}, fmt.Errorf("cron %s: %w", id, ErrNotFound)
	}
	return c, err
}

// countKeys returns how many keys a bucket holds (bbolt: walking them).
func (t *Tx) countKeys(name []byte) int {
	if p, ok := t.kv.(*pgTxn); ok {
		// One count, after the transaction's pending writes, instead of
		// reading every row (and its value) a page at a time.
		rel := pgRelationOf(string(name))
		n, err := pgCollect[int64](p, rel.countSQL, rel.args(string(name))...)
		if err != nil || len(n) != 1 {
			return 0 // a failure fails the transaction
		}
		return int(n[0])
	}
	n := 0
	c := t.bucket(name).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// CronQuery selects crons for SearchCrons.
type CronQuery struct {
	AssistantID *uuid.UUID
	ThreadID    *uuid.UUID
	Enabled     *bool
	Metadata    map[string]any
	// Restrict is the caller's authorisation filter over metadata, ANDed
	// with the rest (nil: none).
	Restrict map[string]any
	// CountOnly skips sorting and paging: SearchCrons returns the total.
	CountOnly bool
	// SortBy is cron_id, assistant_id, thread_id, created_at, updated_at
	// or next_run_date; empty means created_at.
	SortBy string
	Desc   bool
	Limit  int
	Offset int
}

// SearchCrons returns the crons matching q in its order, and their number.
func (t *Tx) SearchCrons(q CronQuery, matchMeta func(doc, filter any) bool) ([]Cron, int, error) {
	var all []Cron
	c := t.bucket(bucketCrons).Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		var cr Cron
		if err := decode(v, &cr); err != nil {
			return nil, 0, err
		}
		if q.matches(cr, matchMeta) {
			all = append(all, cr)
		}
	}
	if q.CountOnly {
		return nil, len(all), nil
	}
	less := cronLess(q.SortBy)
	sort.SliceStable(all, func(i, j int) bool {
		if q.Desc {
			return less(all[j], all[i])
		}
		return less(all[i], all[j])
	})
	return pageOf(all, q.Offset, q.Limit), len(all), nil
}

func (q CronQuery) matches(c Cron, matchMeta func(doc, filter any) bool) bool {
	switch {
	case q.AssistantID != nil && c.AssistantID != *q.AssistantID:
		return false
	case q.ThreadID != nil && (c.ThreadID == nil || *c.ThreadID != *q.ThreadID):
		return false
	case q.Enabled != nil && c.Enabled != *q.Enabled:
		return false
	case len(q.Metadata) > 0 && !matchMeta(c.Metadata, q.Metadata):
		return false
	case len(q.Restrict) > 0 && !matchMeta(c.Metadata, q.Restrict):
		return false
	}
	return true
}

// cronLess orders crons by one field; ties and unknown fields fall back
// to creation order (cron ids are UUIDv7).
func cronLess(field string) func(a, b Cron) bool {
	byID := func(a, b Cron) bool { return bytes.Compare(a.CronID[:], b.CronID[:]) < 0 }
	var key func(c Cron) string
	switch field {
	case "assistant_id":
		key = func(c Cron) string { return c.AssistantID.String() }
	case "thread_id":
		key = func(c Cron) string {
			if c.ThreadID == nil {
				return ""
			}
			return c.ThreadID.String()
		}
	case "updated_at":
		key = func(c Cron) string { return c.UpdatedAt.UTC().Format(time.RFC3339Nano) }
	case "next_run_date":
		key = func(c Cron) string {
			if c.NextRunDate == nil {
				return "~" // never: after every date
			}
			return c.NextRunDate.UTC().Format("2006-01-02T15:04:05.000000000")
		}
	default:
		return byID
	}
	return func(a, b Cron) bool {
		ka, kb := key(a), key(b)
		if ka != kb {
			return ka < kb
		}
		return byID(a, b)
	}
}

// CheckCronIndexes verifies that crons_by_due and crons_by_thread hold
// exactly the entries of the stored crons (on PostgreSQL crons_by_due
// holds none). Tests call it.
func (t *Tx) CheckCronIndexes() error {
	due, byThread := map[string]bool{}, map[string]bool{}
	err := t.bucket(bucketCrons).ForEach(func(_, v []byte) error {
		var c Cron
		if err := decode(v, &c); err != nil {
			return err
		}
		if k := t.dueKey(&c); k != nil {
			due[string(k)] = true
		}
		if c.ThreadID != nil {
			byThread[string(pairKey(*c.ThreadID, c.CronID))] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := t.checkIndexHolds(bucketCronsByDue, due); err != nil {
		return err
	}
	return t.checkIndexHolds(bucketCronsByThread, byThread)
}
