package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"agentserver/internal/errdefs"
)

// Store key framing. An item's key in store_items is
//
//	label(0) 0x1f label(1) 0x1f ... label(n-1) 0x00 item key
//
// Labels are non-empty and contain neither 0x00 nor 0x1f, so the encoding is
// injective and every key of namespace N starts with enc(N)|0x00, while every
// key of a namespace below N starts with enc(N)|0x1f. A prefix scan for N
// therefore visits exactly those two ranges, and ["a"] never matches ["ab"].
const (
	storeLabelSep = 0x1f
	storeKeySep   = 0x00
)

// StoreWildcard is the namespace label that matches any one label in the
// prefix and suffix of a StoreNamespaceQuery.
const StoreWildcard = "*"

// StoreItem is one item of the long-term memory store.
type StoreItem struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	// ExpiresAt is when the item stops being visible; nil means never.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// TTLMinutes is the time-to-live the item was written with; a TTL
	// refresh moves ExpiresAt to now plus this.
	TTLMinutes *float64 `json:"ttl_minutes,omitempty"`
	// Index is the index directive the client sent (false, a list of field
	// paths, or nil).
	Index any `json:"index,omitempty"`

	// Vectors are the item's embeddings, filled by SearchStoreItems when
	// StoreSearch.WithVectors is set; they are stored apart (store_vectors).
	Vectors [][]float32 `json:"-"`

	// encodedValue is Value encoded by PrepareStoreItem, outside the
	// transaction.
	encodedValue []byte
	// blob, when set, holds the value instead of encodedValue: the chunks
	// StageStoreValue wrote, or those the stored item refers to.
	blob *storeBlob
}

// PrepareStoreItem encodes the item's value ahead of PutStoreItem, so that
// the work proportional to the value's size happens before the write
// transaction rather than inside the single writer.
func PrepareStoreItem(it StoreItem) (StoreItem, error) {
	raw, err := json.Marshal(it.Value)
	if err != nil {
		return it, fmt.Errorf("encode store value: %w", err)
	}
	it.encodedValue, it.blob = raw, nil
	return it, nil
}

// PrepareEncodedStoreItem is PrepareStoreItem for a value that arrives
// already encoded: raw, which the caller has found to be what
// IsEncodedObject accepts (a scan of it is not repeated here), is stored
// as it is (it.Value is ignored), so a large value is never decoded and
// re-encoded on its way in. Reading the item back decodes it like any
// other.
func PrepareEncodedStoreItem(it StoreItem, raw []byte) StoreItem {
	it.encodedValue, it.blob = raw, nil
	return it
}

// IsEncodedObject reports whether raw, a well-formed JSON value, is an
// object in valid UTF-8: what PrepareEncodedStoreItem can store as it is.
func IsEncodedObject(raw []byte) bool {
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '{' && utf8.Valid(raw)
}

// StoreDeadline is when an item written or refreshed at now with a TTL of
// ttlMinutes expires.
func StoreDeadline(now time.Time, ttlMinutes float64) time.Time {
	return now.Add(time.Duration(ttlMinutes * float64(time.Minute)))
}

// storeItemHead is how an item is stored before its value: its fields, and
// the reference to a staged value (value_blob) that stands for the value.
type storeItemHead struct {
	StoreItem
	Value *struct{}  `json:"value,omitempty"`
	Blob  *storeBlob `json:"value_blob,omitempty"`
}

// storeRecord is a stored item as decoded: an inline value lands in
// StoreItem.Value, a staged one is named by Blob.
type storeRecord struct {
	StoreItem
	Blob *storeBlob `json:"value_blob"`
}

// encodeStoreItem encodes it with its value last (or, for a staged value,
// only the reference to it), reusing the value PrepareStoreItem encoded.
// The fields before the value are then readable without scanning the
// value (readStoreItemHead).
func encodeStoreItem(it StoreItem) ([]byte, error) {
	head, err := encode(storeItemHead{StoreItem: it, Blob: it.blob})
	if err != nil {
		return nil, err
	}
	if it.blob != nil {
		return head, nil
	}
	value := it.encodedValue
	if value == nil {
		if value, err = encode(it.Value); err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, len(head)+len(`,"value":`)+len(value))
	out = append(out, head[:len(head)-1]...)
	out = append(out, `,"value":`...)
	out = append(out, value...)
	return append(out, '}'), nil
}

// storeHead is the part of a stored item that a replacement carries over,
// the expiry index needs, and a deletion follows to a staged value.
type storeHead struct {
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	Blob      *storeBlob `json:"value_blob"`
}

// expiredAt reports whether the item has expired at now.
func (h storeHead) expiredAt(now time.Time) bool {
	return h.ExpiresAt != nil && !now.Before(*h.ExpiresAt)
}

// readStoreItemHead reads the head of a stored item. An item encoded by
// encodeStoreItem has its value last, so the read stops where the value
// begins: the writer replacing or deleting a large item does not scan it.
// Items written before that layout (value first) are read whole.
func readStoreItemHead(raw []byte) (storeHead, error) {
	var h storeHead
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return h, fmt.Errorf("decode record: %w", err)
	}
	if tok != json.Delim('{') {
		return h, errors.New("decode record: a store item is not a JSON object")
	}
	seenCreated := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return h, fmt.Errorf("decode record: %w", err)
		}
		var dst any = new(json.RawMessage)
		switch tok {
		case "created_at":
			dst, seenCreated = &h.CreatedAt, true
		case "expires_at":
			dst = &h.ExpiresAt
		case "value_blob":
			dst = &h.Blob
		case "value":
			if seenCreated {
				return h, nil // the head came first: nothing after the value
			}
		}
		if err := dec.Decode(dst); err != nil {
			return h, fmt.Errorf("decode record: %w", err)
		}
	}
	return h, nil
}

// ExpiredAt reports whether the item has expired at now.
func (it StoreItem) ExpiredAt(now time.Time) bool {
	return it.ExpiresAt != nil && !now.Before(*it.ExpiresAt)
}

// StoreSearch selects store items for Tx.SearchStoreItems.
type StoreSearch struct {
	// Prefix matches namespaces whose leading labels equal it; empty
	// matches every namespace. Labels are literal (no wildcards).
	Prefix []string
	// Match, when set, keeps only the items for which it returns true.
	Match func(*StoreItem) bool
	// Now hides items that have expired at this time.
	Now time.Time
	// Limit bounds the page (<= 0: no limit); Offset skips matches.
	Limit, Offset int
	// WithVectors fills each item's Vectors.
	WithVectors bool
}

// StoreNamespaceQuery selects namespaces for Tx.ListStoreNamespaces.
type StoreNamespaceQuery struct {
	// Prefix and Suffix match the leading and trailing labels of a
	// namespace; a StoreWildcard label matches any one label.
	Prefix, Suffix []string
	// MaxDepth, when set, truncates each matching namespace to that many
	// labels before duplicates are removed.
	MaxDepth *int
	// Now hides namespaces whose items have all expired at this time.
	Now time.Time
	// Limit bounds the page (<= 0: no limit); Offset skips namespaces.
	Limit, Offset int
	// Match, when set, counts a namespace only when one of its live items
	// satisfies it (the caller's authorisation filter over values).
	Match func(*StoreItem) bool
}

// checkStoreNamespace reports why namespace cannot be framed, if it cannot.
func checkStoreNamespace(namespace []string) error {
	if len(namespace) == 0 {
		return fmt.Errorf("store namespace is empty: %w", errdefs.ErrInvalid)
	}
	for i, l := range namespace {
		if l == "" {
			return fmt.Errorf("store namespace label %d is empty: %w", i, errdefs.ErrInvalid)
		}
		if strings.IndexByte(l, storeLabelSep) >= 0 || strings.IndexByte(l, storeKeySep) >= 0 {
			return fmt.Errorf("store namespace label %q contains byte 0x00 or 0x1f: %w", l, errdefs.ErrInvalid)
		}
	}
	return nil
}

// encodeStoreNamespace joins labels with the label separator. The labels
// must have passed checkStoreNamespace.
func encodeStoreNamespace(namespace []string) []byte {
	n := len(namespace)
	for _, l := range namespace {
		n += len(l)
	}
	b := make([]byte, 0, n+1)
	for i, l := range namespace {
		if i > 0 {
			b = append(b, storeLabelSep)
		}
		b = append(b, l...)
	}
	return b
}

func storeItemKey(namespace []string, key string) ([]byte, error) {
	if err := checkStoreNamespace(namespace); err != nil {
		return nil, err
	}
	k := encodeStoreNamespace(namespace)
	k = append(k, storeKeySep)
	return append(k, key...), nil
}

// splitStoreItemKey returns the encoded namespace part of an item key.
func splitStoreItemKey(k []byte) (ns []byte, ok bool) {
	i := bytes.IndexByte(k, storeKeySep)
	if i < 0 {
		return nil, false
	}
	return k[:i], true
}

func decodeStoreNamespace(ns []byte) []string {
	return strings.Split(string(ns), string(rune(storeLabelSep)))
}

// storeExpiryKey encodes expires_at(8, unix nanos, big endian) | item key.
func storeExpiryKey(at time.Time, itemKey []byte) []byte {
	k := make([]byte, 8+len(itemKey))
	putTime(k, at)
	copy(k[8:], itemKey)
	return k
}

// storeScanRanges returns the key prefixes that hold the items of the
// namespaces starting with prefix, in key order, or nil when no stored
// namespace can start with it.
func storeScanRanges(prefix []string) [][]byte {
	if len(prefix) == 0 {
		return [][]byte{nil}
	}
	if checkStoreNamespace(prefix) != nil {
		return nil
	}
	enc := encodeStoreNamespace(prefix)
	exact := append(slices.Clip(enc), storeKeySep)
	below := append(slices.Clip(enc), storeLabelSep)
	return [][]byte{exact, below}
}

// GetStoreItem returns the item stored under namespace and key, or
// ErrNotFound when there is none or it has expired at now.
func (t *Tx) GetStoreItem(namespace []string, key string, now time.Time) (StoreItem, error) {
	k, err := storeItemKey(namespace, key)
	if err != nil {
		return StoreItem{}, err
	}
	raw := t.bucket(bucketStoreItems).Get(k)
	if raw == nil {
		return StoreItem{}, fmt.Errorf("store item %q: %w", key, ErrNotFound)
	}
	it, err := t.readStoreItem(raw, now)
	if err == nil && it == nil {
		err = fmt.Errorf("store item %q: %w", key, ErrNotFound)
	}
	if err != nil {
		return StoreItem{}, err
	}
	return *it, nil
}

// readStoreItem decodes a stored item with its value, or returns nil when
// it has expired at now (its staged value is then not read).
func (t *Tx) readStoreItem(raw []byte, now time.Time) (*StoreItem, error) {
	var rec storeRecord
	if err := decode(raw, &rec); err != nil {
		return nil, err
	}
	if rec.ExpiredAt(now) {
		return nil, nil
	}
	if rec.Blob != nil {
		value, err := t.storeBlobValue(*rec.Blob)
		if err != nil {
			return nil, err
		}
		if err := decode(value, &rec.Value); err != nil {
			return nil, err
		}
	}
	return &rec.StoreItem, nil
}

// PutStoreItem creates or replaces an item and keeps the expiry index in
// step. When an item that has not expired at it.UpdatedAt already exists
// under the same key, its CreatedAt is kept; otherwise CreatedAt is
// it.CreatedAt, or it.UpdatedAt when that is zero. A namespace that cannot
// be framed (empty, an empty label, a label with 0x00 or 0x1f) is refused
// with ErrInvalid. A value StageStoreValue staged becomes the item's; the
// staged value of the item replaced is deleted.
func (t *Tx) PutStoreItem(it StoreItem) error {
	k, err := storeItemKey(it.Namespace, it.Key)
	if err != nil {
		return err
	}
	if it.blob != nil && it.blob.staged {
		if err := t.takeStoreBlob(*it.blob); err != nil {
			return err
		}
	}
	b := t.bucket(bucketStoreItems)
	if raw := b.Get(k); raw != nil {
		old, err := readStoreItemHead(raw)
		if err != nil {
			return err
		}
		if ek := t.expiryEntry(old.ExpiresAt, k); ek != nil {
			if err := t.bucket(bucketStoreExpiry).Delete(ek); err != nil {
				return err
			}
		}
		if old.Blob != nil && (it.blob == nil || it.blob.ID != old.Blob.ID) {
			if err := t.deleteStoreBlob(old.Blob.ID); err != nil {
				return err
			}
		}
		if !old.expiredAt(it.UpdatedAt) {
			it.CreatedAt = old.CreatedAt
		}
	}
	if it.CreatedAt.IsZero() {
		it.CreatedAt = it.UpdatedAt
	}
	raw, err := encodeStoreItem(it)
	if err != nil {
		return err
	}
	if err := b.Put(k, raw); err != nil {
		return err
	}
	if ek := t.expiryEntry(it.ExpiresAt, k); ek != nil {
		return t.bucket(bucketStoreExpiry).Put(ek, nil)
	}
	return nil
}

// expiryEntry is the store_expiry key of an item with the deadline at, or
// nil when it has none or the backend keeps no such entries: on
// PostgreSQL the store_items table's index on expires_at finds expired
// items (pgExpiredStoreItemsSQL).
func (t *Tx) expiryEntry(at *time.Time, itemKey []byte) []byte {
	if _, pg := t.kv.(*pgTxn); pg || at == nil {
		return nil
	}
	return storeExpiryKey(*at, itemKey)
}

// RefreshStoreItem moves the deadline of the item under namespace and key
// to now plus its TTL. An item that is missing, has expired at now or has
// no TTL is left as it is. The value is carried over as stored: neither
// decoded nor, when staged, read.
func (t *Tx) RefreshStoreItem(namespace []string, key string, now time.Time) error {
	k, err := storeItemKey(namespace, key)
	if err != nil {
		return err
	}
	raw := t.bucket(bucketStoreItems).Get(k)
	if raw == nil {
		return t.kv.failure()
	}
	var rec struct {
		storeRecord
		Value json.RawMessage `json:"value"`
	}
	if err := decode(raw, &rec); err != nil {
		return err
	}
	it := rec.StoreItem
	if it.ExpiredAt(now) || it.TTLMinutes == nil {
		return nil
	}
	exp := StoreDeadline(now, *it.TTLMinutes)
	it.ExpiresAt, it.encodedValue, it.blob = &exp, rec.Value, rec.Blob
	return t.PutStoreItem(it)
}

// DeleteStoreItem removes an item and its expiry index entry, whether or
// not it has expired. It returns ErrNotFound when there is no record.
func (t *Tx) DeleteStoreItem(namespace []string, key string) error {
	k, err := storeItemKey(namespace, key)
	if err != nil {
		return err
	}
	b := t.bucket(bucketStoreItems)
	raw := b.Get(k)
	if raw == nil {
		return fmt.Errorf("store item %q: %w", key, ErrNotFound)
	}
	e, err := readStoreItemHead(raw)
	if err != nil {
		return err
	}
	if ek := t.expiryEntry(e.ExpiresAt, k); ek != nil {
		if err := t.bucket(bucketStoreExpiry).Delete(ek); err != nil {
			return err
		}
	}
	if e.Blob != nil {
		if err := t.deleteStoreBlob(e.Blob.ID); err != nil {
			return err
		}
	}
	if err := t.bucket(bucketStoreVectors).Delete(k); err != nil {
		return err
	}
	return b.Delete(k)
}

// SearchStoreItems returns one page of the unexpired items under q.Prefix
// that q.Match keeps, newest update first, then by namespace and key. Every
// item under the prefix is decoded: there is no index on values or on
// update time.
func (t *Tx) SearchStoreItems(q StoreSearch) ([]StoreItem, error) {
	var out []StoreItem
	c := t.bucket(bucketStoreItems).Cursor()
	for _, p := range storeScanRanges(q.Prefix) {
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			it, err := t.readStoreItem(v, q.Now)
			if err != nil {
				return nil, err
			}
			if it == nil || (q.Match != nil && !q.Match(it)) {
				continue
			}
			if q.WithVectors {
				vecs, err := t.storeVectors(k)
				if err != nil {
					return nil, err
				}
				it.Vectors = vecs
			}
			out = append(out, *it)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		if c := slices.Compare(a.Namespace, b.Namespace); c != 0 {
			return c < 0
		}
		return a.Key < b.Key
	})
	return pageOf(out, q.Offset, q.Limit), nil
}

// ListStoreNamespaces returns one page of the distinct namespaces that hold
// at least one unexpired item and match q's prefix and suffix, each
// truncated to q.MaxDepth labels when it is set, sorted label by label.
func (t *Tx) ListStoreNamespaces(q StoreNamespaceQuery) ([][]string, error) {
	literal := q.Prefix
	if i := slices.Index(q.Prefix, StoreWildcard); i >= 0 {
		literal = q.Prefix[:i]
	}
	seen := map[string]bool{}
	var out [][]string
	c := t.bucket(bucketStoreItems).Cursor()
	for _, p := range storeScanRanges(literal) {
		k, v := c.Seek(p)
		for k != nil && bytes.HasPrefix(k, p) {
			enc, ok := splitStoreItemKey(k)
			if !ok {
				k, v = c.Next()
				continue
			}
			ns := decodeStoreNamespace(enc)
			if matchLabels(ns, q.Prefix, false) && matchLabels(ns, q.Suffix, true) {
				live, err := t.namespaceItemCounts(v, q)
				if err != nil {
					return nil, err
				}
				if !live {
					// Another item of the same namespace may still be live.
					k, v = c.Next()
					continue
				}
				if q.MaxDepth != nil && *q.MaxDepth >= 0 && len(ns) > *q.MaxDepth {
					ns = ns[:*q.MaxDepth]
				}
				id := strings.Join(ns, string(rune(storeLabelSep)))
				if !seen[id] {
					seen[id] = true
					out = append(out, ns)
				}
			}
			// The namespace is decided: skip its remaining items, which all
			// sort before enc|0x01.
			k, v = c.Seek(append(slices.Clip(enc), storeKeySep+1))
		}
	}
	sort.Slice(out, func(i, j int) bool { return slices.Compare(out[i], out[j]) < 0 })
	return pageOf(out, q.Offset, q.Limit), nil
}

// namespaceItemCounts reports whether the item encoded in v makes its
// namespace listed: it is live and, with q.Match, matches.
func (t *Tx) namespaceItemCounts(v []byte, q StoreNamespaceQuery) (bool, error) {
	if q.Match == nil {
		e, err := readStoreItemHead(v)
		return err == nil && !e.expiredAt(q.Now), err
	}
	it, err := t.readStoreItem(v, q.Now)
	return err == nil && it != nil && q.Match(it), err
}

// matchLabels reports whether the leading (or, with fromEnd, trailing)
// labels of ns match cond, where a StoreWildcard label matches any label.
func matchLabels(ns, cond []string, fromEnd bool) bool {
	if len(cond) > len(ns) {
		return false
	}
	if fromEnd {
		ns = ns[len(ns)-len(cond):]
	}
	for i, l := range cond {
		if l != StoreWildcard && l != ns[i] {
			return false
		}
	}
	return true
}

// DeleteExpiredStoreItems deletes up to limit items (limit <= 0: no bound) that
// have expired at now, with their expiry index entries, walking the expiry
// index from the earliest deadline. It returns how many items it deleted.
func (t *Tx) DeleteExpiredStoreItems(now time.Time, limit int) (int, error) {
	if p, ok := t.kv.(*pgTxn); ok {
		return t.deleteExpiredStoreItemsSQL(p, now, limit)
	}
	exp := t.bucket(bucketStoreExpiry)
	items := t.bucket(bucketStoreItems)
	var due [][]byte
	c := exp.Cursor()
	for k, _ := c.First(); k != nil && (limit <= 0 || len(due) < limit); k, _ = c.Next() {
		if len(k) < 8 {
			due = append(due, bytes.Clone(k)) // malformed: drop it
			continue
		}
		at := time.Unix(0, int64(binary.BigEndian.Uint64(k[:8])))
		if now.Before(at) {
			break
		}
		due = append(due, bytes.Clone(k))
	}
	n := 0
	for _, k := range due {
		if err := exp.Delete(k); err != nil {
			return n, err
		}
		if len(k) < 8 {
			continue
		}
		itemKey := k[8:]
		raw := items.Get(itemKey)
		if raw == nil {
			continue
		}
		e, err := readStoreItemHead(raw)
		if err != nil {
			return n, err
		}
		// The index entry is the item's only if it carries the same deadline.
		if e.ExpiresAt == nil || !bytes.Equal(storeExpiryKey(*e.ExpiresAt, itemKey), k) {
			continue
		}
		if err := t.deleteStoreItemAt(itemKey, e); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// On PostgreSQL expired store items are found through the store_items
// table's index on expires_at (migration 6). The column keeps
// microseconds, so each candidate's own deadline is checked again.
const pgExpiredStoreItemsSQL = `SELECT k FROM store_items WHERE expires_at <= $1 ORDER BY expires_at, k LIMIT $2`

// deleteExpiredStoreItemsSQL is DeleteExpiredStoreItems on PostgreSQL.
func (t *Tx) deleteExpiredStoreItemsSQL(p *pgTxn, now time.Time, limit int) (int, error) {
	var bound any // NULL: no limit
	if limit > 0 {
		bound = limit
	}
	keys, err := p.values(pgExpiredStoreItemsSQL, now, bound)
	if err != nil {
		return 0, err
	}
	items := t.bucket(bucketStoreItems)
	n := 0
	for _, k := range keys {
		raw := items.Get(k)
		if raw == nil {
			continue
		}
		e, err := readStoreItemHead(raw)
		if err != nil {
			return n, err
		}
		if !e.expiredAt(now) {
			continue
		}
		if err := t.deleteStoreItemAt(k, e); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// deleteStoreItemAt deletes the item stored under itemKey, whose head is
// e, with its large value and its vectors (not its expiry entry).
func (t *Tx) deleteStoreItemAt(itemKey []byte, e storeHead) error {
	if e.Blob != nil {
		if err := t.deleteStoreBlob(e.Blob.ID); err != nil {
			return err
		}
	}
	if err := t.bucket(bucketStoreItems).Delete(itemKey); err != nil {
		return err
	}
	return t.bucket(bucketStoreVectors).Delete(itemKey)
}

// CheckStoreExpiryIndex verifies that the expiry index holds exactly one
// entry for every item with a deadline, carrying that deadline, and nothing
// else (on PostgreSQL: that the store_items table's expires_at column holds
// each item's deadline, to the microsecond, and store_expiry nothing). It
// reads every item; tests and offline checks call it.
func (t *Tx) CheckStoreExpiryIndex() error {
	if p, ok := t.kv.(*pgTxn); ok {
		return t.checkStoreExpiryColumn(p)
	}
	want := map[string]bool{}
	err := t.bucket(bucketStoreItems).ForEach(func(k, v []byte) error {
		e, err := readStoreItemHead(v)
		if err != nil {
			return err
		}
		if e.ExpiresAt != nil {
			want[string(storeExpiryKey(*e.ExpiresAt, k))] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	return t.checkIndexHolds(bucketStoreExpiry, want)
}

// checkIndexHolds verifies that the index bucket holds exactly the keys
// of want.
func (t *Tx) checkIndexHolds(index []byte, want map[string]bool) error {
	n := 0
	err := t.bucket(index).ForEach(func(k, _ []byte) error {
		if !want[string(k)] {
			return fmt.Errorf("%s entry %x has no matching record", index, k)
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	if n != len(want) {
		return fmt.Errorf("%s has %d entries, the records need %d", index, n, len(want))
	}
	return nil
}

// checkStoreExpiryColumn is CheckStoreExpiryIndex on PostgreSQL.
func (t *Tx) checkStoreExpiryColumn(p *pgTxn) error {
	type row struct {
		K         []byte
		V         []byte
		ExpiresAt *time.Time
	}
	var rows []row
	err := p.query(`SELECT k, v, expires_at FROM store_items`, nil, func(r pgx.Rows) error {
		var err error
		rows, err = pgx.CollectRows(r, pgx.RowToStructByPos[row])
		return err
	})
	if err != nil {
		return err
	}
	for _, r := range rows {
		e, err := readStoreItemHead(r.V)
		if err != nil {
			return err
		}
		differs := (e.ExpiresAt == nil) != (r.ExpiresAt == nil) ||
			(e.ExpiresAt != nil && e.ExpiresAt.Sub(*r.ExpiresAt).Abs() >= time.Microsecond)
		if differs {
			return fmt.Errorf("store item %x: deadline %v, expires_at column %v", r.K, e.ExpiresAt, r.ExpiresAt)
		}
	}
	if n := t.countKeys(bucketStoreExpiry); n != 0 {
		return fmt.Errorf("store_expiry holds %d entries on PostgreSQL, want none", n)
	}
	return nil
}
