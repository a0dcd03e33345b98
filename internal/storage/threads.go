package storage

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/errdefs"
	"agentserver/internal/jsonx"
)

// Thread is the stored form of a thread. Its values live in its newest
// checkpoint (see Tx.LatestCheckpoint), not here.
type Thread struct {
	ThreadID       uuid.UUID      `json:"thread_id"`
	CreatedAt      time.Time      `json:"created_at"`
	UpdatedAt      time.Time      `json:"updated_at"`
	StateUpdatedAt time.Time      `json:"state_updated_at"`
	Metadata       map[string]any `json:"metadata"`
	Status         string         `json:"status"`
	Config         map[string]any `json:"config,omitempty"`
	// Error is the error of the last run when Status is "error".
	Error any `json:"error,omitempty"`
	// TTL is the thread's time-to-live policy as the client sent it.
	TTL map[string]any `json:"ttl,omitempty"`
}

// ThreadQuery selects and orders threads. Zero fields do not filter.
type ThreadQuery struct {
	IDs      []uuid.UUID
	Metadata map[string]any
	Values   map[string]any
	Status   string
	// SortBy is one of thread_id, status, created_at, updated_at,
	// state_updated_at; empty means created_at.
	SortBy string
	// Desc orders from largest to smallest.
	Desc   bool
	Limit  int
	Offset int
	// CountOnly skips loading the page; Search then returns only the total.
	CountOnly bool
	// Restrict is the caller's authorisation filter, a containment
	// document over metadata ANDed with Metadata (nil: none). It is
	// answered by the metadata index like Metadata, so a user who owns few
	// threads pages through them without the others being read.
	Restrict map[string]any
}

// threadCandidate is a thread found through an index, before it is loaded.
type threadCandidate struct {
	id      uuid.UUID
	created time.Time
}

// GetThread returns the thread with id, or ErrNotFound.
func (t *Tx) GetThread(id uuid.UUID) (Thread, error) {
	var th Thread
	raw := t.bucket(bucketThreads).Get(id[:])
	if raw == nil {
		return th, fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	err := decode(raw, &th)
	return th, err
}

// GetThreadWhere returns the thread with id when its metadata contains
// restrict (nil: any thread), else ErrNotFound, exactly as for a thread
// that does not exist.
func (t *Tx) GetThreadWhere(id uuid.UUID, restrict map[string]any) (Thread, error) {
	th, err := t.GetThread(id)
	if err == nil && len(restrict) > 0 && !jsonx.Contains(th.Metadata, restrict) {
		return Thread{}, fmt.Errorf("thread %s: %w", id, ErrNotFound)
	}
	return th, err
}

// ThreadExists reports whether a thread with id exists.
func (t *Tx) ThreadExists(id uuid.UUID) bool {
	return t.bucket(bucketThreads).Get(id[:]) != nil
}

// MaxThreadMetadataKeys bounds the keys of a thread's metadata: each
// top-level key is a secondary-index entry, written in the single writer's
// transaction, so the bound keeps one thread's update from holding up
// every other write.
const MaxThreadMetadataKeys = 1024

// PutThread creates or replaces a thread and keeps its indexes in step. It
// refuses (ErrInvalid) metadata with more than MaxThreadMetadataKeys keys.
func (t *Tx) PutThread(th Thread) error {
	if err := checkThreadMetadata(th); err != nil {
		return err
	}
	b := t.bucket(bucketThreads)
	var old *Thread
	if raw := b.Get(th.ThreadID[:]); raw != nil {
		old = new(Thread)
		if err := decode(raw, old); err != nil {
			return err
		}
	}
	return t.writeThread(b, old, th)
}

// PutNewThread stores a thread whose id the caller has just generated, so
// that no record of it can exist: unlike PutThread it reads nothing (on
// PostgreSQL, a round trip fewer).
func (t *Tx) PutNewThread(th Thread) error {
	if err := checkThreadMetadata(th); err != nil {
		return err
	}
	return t.writeThread(t.bucket(bucketThreads), nil, th)
}

// checkThreadMetadata refuses metadata with more than
// MaxThreadMetadataKeys keys (ErrInvalid).
func checkThreadMetadata(th Thread) error {
	if n := len(th.Metadata); n > MaxThreadMetadataKeys {
		return fmt.Errorf("thread metadata has %d keys, more than the limit of %d: %w", n, MaxThreadMetadataKeys, errdefs.ErrInvalid)
	}
	return nil
}

// writeThread stores th over old (nil: none) and moves its index entries.
func (t *Tx) writeThread(b kvBucket, old *Thread, th Thread) error {
	raw, err := encode(th)
	if err != nil {
		return err
	}
	if err := b.Put(idKey(th.ThreadID), raw); err != nil {
		return err
	}
	return t.reindexThread(old, &th)
}

// DeleteThread removes a thread with its checkpoints, its runs and their
// index entries. It returns ErrNotFound if there is no such thread.
func (t *Tx) DeleteThread(id uuid.UUID) error {
	old, err := t.GetThread(id)
	if err != nil {
		return err
	}
	if err := t.reindexThread(&old, nil); err != nil {
		return err
	}
	if err := t.bucket(bucketThreads).Delete(id[:]); err != nil {
		return err
	}
	if err := deletePrefix(t.bucket(bucketCheckpoints), id[:]); err != nil {
		return err
	}
	if _, err := t.deleteNested(id, nil); err != nil {
		return err
	}
	if err := t.seqLog(threadEventLog).deleteOwner(id); err != nil {
		return err
	}
	if err := t.deleteThreadCrons(id); err != nil {
		return err
	}
	return t.deleteThreadRuns(id)
}

// indexEntry is one index entry of a thread: the index's bucket and the
// entry's key.
type indexEntry struct {
	bucket, key []byte
}

func compareIndexEntries(a, b indexEntry) int {
	if c := bytes.Compare(a.bucket, b.bucket); c != 0 {
		return c
	}
	return bytes.Compare(a.key, b.key)
}

// threadIndexEntries lists a thread's index entries, sorted by bucket and
// key. searchIndexes adds those of the search (creation, status,
// metadata), which only the embedded backend keeps (pgthreads.go).
func threadIndexEntries(th *Thread, searchIndexes bool) []indexEntry {
	out := make([]indexEntry, 0, 3+len(th.Metadata))
	if k := expiryIndexKey(th); k != nil {
		out = append(out, indexEntry{bucketThreadsByExpiry, k})
	}
	if searchIndexes {
		out = append(out,
			indexEntry{bucketThreadsByCreated, timeIDKey(nil, th.CreatedAt, th.ThreadID)},
			indexEntry{bucketThreadsByStatus, timeIDKey(statusPrefix(th.Status), th.CreatedAt, th.ThreadID)})
		for k, v := range th.Metadata {
			if p, ok := indexedValue(k, v); ok {
				out = append(out, indexEntry{bucketThreadsByMeta, timeIDKey(p, th.CreatedAt, th.ThreadID)})
			}
		}
	}
	slices.SortFunc(out, compareIndexEntries)
	return out
}

// reindexThread moves a thread's index entries from old to cur (either may
// be nil). Entries both have are left alone, so that an update that changes
// only the status touches only the status index: every page a commit
// dirties is written and synced.
func (t *Tx) reindexThread(old, cur *Thread) error {
	_, onPG := t.kv.(*pgTxn)
	var was, is []indexEntry
	if old != nil {
		was = threadIndexEntries(old, !onPG)
	}
	if cur != nil {
		is = threadIndexEntries(cur, !onPG)
	}
	// Both lists are sorted: one merge finds what only one of them has.
	for len(was) > 0 || len(is) > 0 {
		c := 0
		switch {
		case len(was) == 0:
			c = 1
		case len(is) == 0:
			c = -1
		default:
			c = compareIndexEntries(was[0], is[0])
		}
		switch {
		case c < 0:
			if err := t.bucket(was[0].bucket).Delete(was[0].key); err != nil {
				return err
			}
			was = was[1:]
		case c > 0:
			if err := t.bucket(is[0].bucket).Put(is[0].key, nil); err != nil {
				return err
			}
			is = is[1:]
		default:
			was, is = was[1:], is[1:]
		}
	}
	return nil
}

func statusPrefix(status string) []byte {
	return append([]byte(status), 0)
}

// SearchThreads returns one page of the threads that match q, in q's order,
// and the number of matching threads.
//
// Candidates come from the most specific index available (ids, a metadata
// value, the status, or creation time); a candidate is loaded only when a
// filter the index did not answer must be checked or the sort key is not in
// the index, so that an indexed search with the default order decodes no
// more than one page of records.
func (t *Tx) SearchThreads(q ThreadQuery) ([]Thread, int, error) {
	q, ok := withRestriction(q)
	if !ok {
		return []Thread{}, 0, nil
	}
	if p, ok := t.kv.(*pgTxn); ok {
		return t.searchThreadsSQL(p, q)
	}
	ids, scans, exact := t.threadSources(q)
	if ids == nil && len(scans) == 1 && exact && (q.SortBy == "" || q.SortBy == "created_at") {
		return t.searchOneIndex(scans[0], q)
	}
	cands := ids
	if ids == nil {
		sets := make([][]threadCandidate, len(scans))
		for i, sc := range scans {
			sets[i] = scanTimeIDs(sc.b, sc.prefix)
		}
		cands = intersect(sets)
	}
	needsLoad := !exact || (q.SortBy != "" && q.SortBy != "created_at" && q.SortBy != "thread_id")
	if !needsLoad {
		sortCandidates(cands, q.SortBy, q.Desc)
		if q.CountOnly {
			return nil, len(cands), nil
		}
		out, err := t.loadThreads(pageOf(cands, q.Offset, q.Limit))
		return out, len(cands), err
	}
	var matched []Thread
	for _, c := range cands {
		th, err := t.GetThread(c.id)
		if err != nil {
			continue // an id from the ids filter that does not exist
		}
		if !t.threadMatches(th, q) {
			continue
		}
		matched = append(matched, th)
	}
	sortThreads(matched, q.SortBy, q.Desc)
	if q.CountOnly {
		return nil, len(matched), nil
	}
	return pageOf(matched, q.Offset, q.Limit), len(matched), nil
}

// withRestriction folds q.Restrict into q.Metadata. ok is false when the
// two cannot both hold (a key with two different values): nothing matches.
// Lists are joined, as containing both lists is containing their union.
func withRestriction(q ThreadQuery) (ThreadQuery, bool) {
	if len(q.Restrict) == 0 {
		return q, true
	}
	md := make(map[string]any, len(q.Metadata)+len(q.Restrict))
	for k, v := range q.Metadata {
		md[k] = v
	}
	for k, v := range q.Restrict {
		have, present := md[k]
		switch {
		case !present:
			md[k] = v
		case jsonx.Contains(have, v) && jsonx.Contains(v, have):
		default:
			a, aList := have.([]any)
			b, bList := v.([]any)
			if !aList || !bList {
				return q, false
			}
			md[k] = append(append([]any{}, a...), b...)
		}
	}
	q.Metadata, q.Restrict = md, nil
	return q, true
}

// indexScan is one index range whose keys end in created_at | thread_id.
type indexScan struct {
	b      kvBucket
	prefix []byte
}

// searchOneIndex answers a query that one index range answers exactly, in
// creation order: it counts the range's keys and decodes only the page.
func (t *Tx) searchOneIndex(sc indexScan, q ThreadQuery) ([]Thread, int, error) {
	total := 0
	c := sc.b.Cursor()
	for k, _ := c.Seek(sc.prefix); k != nil && bytes.HasPrefix(k, sc.prefix); k, _ = c.Next() {
		total++
	}
	if q.CountOnly {
		return nil, total, nil
	}
	var page []threadCandidate
	step := c.Next
	k, _ := c.Seek(sc.prefix)
	if q.Desc {
		step = c.Prev
		k, _ = seekLastWithPrefix(c, sc.prefix)
	}
	for skipped := 0; k != nil && bytes.HasPrefix(k, sc.prefix) && (q.Limit <= 0 || len(page) < q.Limit); k, _ = step() {
		if len(k) != len(sc.prefix)+24 {
			continue
		}
		if skipped < q.Offset {
			skipped++
			continue
		}
		created, id := splitTimeID(k)
		page = append(page, threadCandidate{id: id, created: created})
	}
	out, err := t.loadThreads(page)
	return out, total, err
}

func (t *Tx) loadThreads(cands []threadCandidate) ([]Thread, error) {
	out := make([]Thread, 0, len(cands))
	for _, c := range cands {
		th, err := t.GetThread(c.id)
		if err != nil {
			return nil, err
		}
		out = append(out, th)
	}
	return out, nil
}

// threadSources returns where a query's candidates come from: explicit ids,
// or index ranges to intersect; exact reports that the candidates are
// exactly the matches (no record needs checking).
func (t *Tx) threadSources(q ThreadQuery) ([]threadCandidate, []indexScan, bool) {
	if len(q.IDs) > 0 {
		seen := make(map[uuid.UUID]bool, len(q.IDs))
		out := []threadCandidate{}
		for _, id := range q.IDs {
			if seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, threadCandidate{id: id})
		}
		return out, nil, false
	}
	var scans []indexScan
	exact := len(q.Values) == 0
	for k, v := range q.Metadata {
		p, ok := indexedValue(k, v)
		if !ok {
			exact = false
			continue
		}
		scans = append(scans, indexScan{t.bucket(bucketThreadsByMeta), p})
	}
	if q.Status != "" {
		scans = append(scans, indexScan{t.bucket(bucketThreadsByStatus), statusPrefix(q.Status)})
	}
	if len(scans) == 0 {
		scans = append(scans, indexScan{t.bucket(bucketThreadsByCreated), nil})
	}
	return nil, scans, exact
}

func (t *Tx) threadMatches(th Thread, q ThreadQuery) bool {
	if q.Status != "" && th.Status != q.Status {
		return false
	}
	if len(q.Metadata) > 0 && !jsonx.Contains(th.Metadata, q.Metadata) {
		return false
	}
	if len(q.Values) > 0 {
		cp, err := t.LatestCheckpoint(th.ThreadID)
		var values map[string]any
		if err == nil {
			values = cp.Values
		}
		if !jsonx.Contains(values, q.Values) {
			return false
		}
	}
	return true
}

func scanTimeIDs(b kvBucket, prefix []byte) []threadCandidate {
	var out []threadCandidate
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != len(prefix)+24 {
			continue
		}
		created, id := splitTimeID(k)
		out = append(out, threadCandidate{id: id, created: created})
	}
	return out
}

func intersect(sets [][]threadCandidate) []threadCandidate {
	sort.Slice(sets, func(i, j int) bool { return len(sets[i]) < len(sets[j]) })
	out := sets[0]
	for _, s := range sets[1:] {
		in := make(map[uuid.UUID]bool, len(s))
		for _, c := range s {
			in[c.id] = true
		}
		kept := out[:0:0]
		for _, c := range out {
			if in[c.id] {
				kept = append(kept, c)
			}
		}
		out = kept
	}
	return out
}

func sortCandidates(c []threadCandidate, by string, desc bool) {
	sort.SliceStable(c, func(i, j int) bool {
		a, b := c[i], c[j]
		if desc {
			a, b = b, a
		}
		if by == "thread_id" {
			return bytes.Compare(a.id[:], b.id[:]) < 0
		}
		if !a.created.Equal(b.created) {
			return a.created.Before(b.created)
		}
		return bytes.Compare(a.id[:], b.id[:]) < 0
	})
}

func sortThreads(ts []Thread, by string, desc bool) {
	sort.SliceStable(ts, func(i, j int) bool {
		a, b := ts[i], ts[j]
		if desc {
			a, b = b, a
		}
		switch by {
		case "thread_id":
			return bytes.Compare(a.ThreadID[:], b.ThreadID[:]) < 0
		case "status":
			if a.Status != b.Status {
				return strings.Compare(a.Status, b.Status) < 0
			}
		case "updated_at":
			if !a.UpdatedAt.Equal(b.UpdatedAt) {
				return a.UpdatedAt.Before(b.UpdatedAt)
			}
		case "state_updated_at":
			if !a.StateUpdatedAt.Equal(b.StateUpdatedAt) {
				return a.StateUpdatedAt.Before(b.StateUpdatedAt)
			}
		}
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		return bytes.Compare(a.ThreadID[:], b.ThreadID[:]) < 0
	})
}

// pageOf returns s[offset:offset+limit], clamped; limit <= 0 means no limit.
func pageOf[T any](s []T, offset, limit int) []T {
	if offset >= len(s) {
		return nil
	}
	s = s[offset:]
	if limit > 0 && limit < len(s) {
		s = s[:limit]
	}
	return s
}
