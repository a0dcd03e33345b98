package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
	"agentserver/internal/jsonx"
	"agentserver/internal/lifecycle"
	"agentserver/internal/storage"
)

// Defaults applied when a caller passes a limit of zero.
const (
	DefaultSearchLimit    = 10
	DefaultNamespaceLimit = 100
)

// DefaultSweepInterval is how often Run deletes expired items.
const DefaultSweepInterval = 30 * time.Second

// sweepBatch bounds how many expired items one transaction deletes, so a
// large backlog does not hold the writer for long.
const sweepBatch = 512

// stagedSweepBatch bounds the staged values one sweep transaction deletes
// (each up to the body limit in size).
const stagedSweepBatch = 16

// maxTTLMinutes is the largest TTL whose deadline fits a time.Duration.
const maxTTLMinutes = float64(math.MaxInt64 / int64(time.Minute))

// Item is a store item as clients see it.
type Item struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	// Score is the similarity to a semantic search query; nil otherwise.
	Score *float64 `json:"score,omitempty"`
}

// Service reads and writes store items and sweeps expired ones.
type Service struct {
	db         *storage.DB
	log        *slog.Logger
	now        func() time.Time
	sweepEvery time.Duration
	// defaultTTL (minutes, 0: none) is given to items put without a TTL.
	defaultTTL float64
	// refreshOnRead is what reads that do not say refresh_ttl do.
	refreshOnRead bool
	// index turns semantic search on; nil: off (ConfigureIndex).
	index *IndexConfig
	// vectors mirrors the stored vectors for semantic search; writeLocks
	// (by item) keep its updates in the order of the commits.
	vectors    vectorIndex
	writeLocks [64]sync.Mutex
}

// TTLConfig is the store TTL policy of the deployment (store.ttl in
// langgraph.json).
type TTLConfig struct {
	// DefaultTTL, in minutes, is given to items put without a TTL; 0
	// leaves them without one.
	DefaultTTL float64
	// RefreshOnRead is the refresh_ttl of reads that do not give one.
	RefreshOnRead bool
	// SweepInterval is how often expired items are deleted; 0 means
	// DefaultSweepInterval.
	SweepInterval time.Duration
}

// DefaultTTLConfig is the policy without a store.ttl section: no default
// TTL, reads refresh the TTL, as LangGraph's stores do.
func DefaultTTLConfig() TTLConfig {
	return TTLConfig{RefreshOnRead: true, SweepInterval: DefaultSweepInterval}
}

// Options are what a store service is built with beside its database.
type Options struct {
	// Log receives the sweeper's failures (nil: discarded).
	Log *slog.Logger
	// TTL is the TTL policy (nil: DefaultTTLConfig).
	TTL *TTLConfig
	// Clock tells the time (nil: the wall clock, in UTC).
	Clock func() time.Time
}

// RefreshOnRead reports whether reads that do not say refresh_ttl refresh
// the TTL of what they return.
func (s *Service) RefreshOnRead() bool {
	return s.refreshOnRead
}

// New returns a store service over db. It fails when the TTL policy's
// default TTL is out of range.
func New(db *storage.DB, opts Options) (*Service, error) {
	c := DefaultTTLConfig()
	if opts.TTL != nil {
		c = *opts.TTL
	}
	if c.DefaultTTL != 0 {
		if err := validateTTL(&c.DefaultTTL); err != nil {
			return nil, fmt.Errorf("default ttl: %w", err)
		}
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = DefaultSweepInterval
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{
		db:            db,
		log:           log,
		now:           lifecycle.ClockOr(opts.Clock),
		sweepEvery:    c.SweepInterval,
		defaultTTL:    c.DefaultTTL,
		refreshOnRead: c.RefreshOnRead,
	}, nil
}

func invalidf(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, errdefs.ErrInvalid)...)
}

// Size limits of item addresses. Together they keep every stored key far
// below the database's key size limit (32 KiB).
const (
	// MaxKeyBytes bounds an item key.
	MaxKeyBytes = 1024
	// MaxNamespaceBytes bounds the labels of a namespace, together.
	MaxNamespaceBytes = 4096
)

// validateKey checks an item key.
func validateKey(key string) error {
	switch {
	case key == "":
		return invalidf("key must not be empty")
	case len(key) > MaxKeyBytes:
		return invalidf("key is %d bytes long, more than the limit of %d", len(key), MaxKeyBytes)
	}
	return nil
}

// validateNamespace checks a namespace an item is written under.
func validateNamespace(namespace []string) error {
	if len(namespace) == 0 {
		return invalidf("namespace must not be empty")
	}
	total := 0
	for _, l := range namespace {
		total += len(l)
	}
	if total > MaxNamespaceBytes {
		return invalidf("namespace labels are %d bytes long together, more than the limit of %d", total, MaxNamespaceBytes)
	}
	for i, l := range namespace {
		switch {
		case l == "":
			return invalidf("namespace label %d must not be empty", i)
		case strings.Contains(l, "."):
			return invalidf("namespace label %q must not contain '.'", l)
		case strings.ContainsAny(l, "\x00\x1f"):
			return invalidf("namespace label %q must not contain the control characters 0x00 or 0x1f", l)
		}
	}
	return nil
}

func validateIndex(index any) (any, error) {
	switch v := index.(type) {
	case nil:
		return nil, nil
	case bool:
		if !v {
			return false, nil
		}
	case []string:
		return append([]string(nil), v...), nil
	case []any:
		out := make([]string, 0, len(v))
		for _, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, invalidf("index must be false, null or a list of field paths")
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, invalidf("index must be false, null or a list of field paths")
}

func validateTTL(ttl *float64) error {
	if ttl == nil {
		return nil
	}
	if math.IsNaN(*ttl) || *ttl <= 0 {
		return invalidf("ttl must be a positive number of minutes or null")
	}
	if *ttl > maxTTLMinutes {
		return invalidf("ttl must be at most %.0f minutes", maxTTLMinutes)
	}
	return nil
}

// Put creates or replaces the item at namespace and key. index is false
// (not embedded), nil (the configured fields are embedded) or a list of
// field paths to embed instead; without semantic search it is only kept.
// ttlMinutes > 0 makes the
// item expire that many minutes from now, nil gives it the default TTL
// (none unless configured).
func (s *Service) Put(ctx context.Context, namespace []string, key string, value map[string]any, index any, ttlMinutes *float64) error {
	return s.put(ctx, namespace, key, value, nil, index, ttlMinutes)
}

// PutEncoded is Put for a value that arrives encoded, as a request body
// carries it: a JSON object in UTF-8 is stored as it was sent, and decoded
// only where the caller's auth rules or the semantic index must read it.
// Anything else is refused as Put refuses it.
func (s *Service) PutEncoded(ctx context.Context, namespace []string, key string, value json.RawMessage, index any, ttlMinutes *float64) error {
	if !storage.IsEncodedObject(value) || authz.Restricted(ctx) || s.embeds(index) {
		var decoded map[string]any
		if err := json.Unmarshal(value, &decoded); err != nil || decoded == nil {
			return invalidf("value must be an object")
		}
		return s.put(ctx, namespace, key, decoded, nil, index, ttlMinutes)
	}
	return s.put(ctx, namespace, key, nil, value, index, ttlMinutes)
}

// put writes the item whose value is value, or encoded when that is set
// (a JSON object PutEncoded checked; value is then nil).
func (s *Service) put(ctx context.Context, namespace []string, key string, value map[string]any, encoded json.RawMessage, index any, ttlMinutes *float64) error {
	acc, err := authorize(ctx, authz.Put, namespace, map[string]any{"key": key, "value": value, "index": index})
	if err != nil {
		return err
	}
	if !acc.admits(value) {
		return fmt.Errorf("the value is outside what the caller may read back: %w", errdefs.ErrForbidden)
	}
	namespace = acc.namespace
	if err := validateNamespace(namespace); err != nil {
		return err
	}
	if err := validateKey(key); err != nil {
		return err
	}
	if value == nil && encoded == nil {
		return invalidf("value must be an object")
	}
	idx, err := validateIndex(index)
	if err != nil {
		return err
	}
	if err := validateTTL(ttlMinutes); err != nil {
		return err
	}
	if ttlMinutes == nil && s.defaultTTL > 0 {
		ttl := s.defaultTTL
		ttlMinutes = &ttl
	}
	now := s.now()
	it := storage.StoreItem{
		Namespace: append([]string(nil), namespace...),
		Key:       key,
		Value:     value,
		CreatedAt: now,
		UpdatedAt: now,
		Index:     idx,
	}
	if ttlMinutes != nil {
		ttl := *ttlMinutes
		exp := storage.StoreDeadline(now, ttl)
		it.TTLMinutes, it.ExpiresAt = &ttl, &exp
	}
	// Embeddings are computed before the transaction: no network inside it.
	vecs, err := s.vectorsFor(ctx, value, idx)
	if err != nil {
		return err
	}
	var prepared storage.StoreItem
	if encoded != nil {
		prepared = storage.PrepareEncodedStoreItem(it, encoded)
	} else if prepared, err = storage.PrepareStoreItem(it); err != nil {
		return err
	}
	// A large value is written ahead, in pieces that do not hold up the
	// writes of other requests; the item's own transaction stays small.
	if err := s.db.StageStoreValue(ctx, &prepared); err != nil {
		return err
	}
	err = s.writeIndexed(it.Namespace, it.Key, vecs, func() error {
		return s.db.Update(ctx, func(tx *storage.Tx) error {
			if err := tx.PutStoreItem(prepared); err != nil {
				return err
			}
			return tx.PutStoreVectors(it.Namespace, it.Key, vecs)
		})
	})
	if err != nil {
		if derr := s.db.DropStagedStoreValue(prepared); derr != nil {
			s.log.Warn("store: dropping the staged value of a failed put", "err", derr)
		}
	}
	return err
}

// storable reports whether namespace and key could address a stored item;
// Get and Delete treat anything else as missing.
func storable(namespace []string, key string) (bool, error) {
	if key == "" {
		return false, invalidf("key must not be empty")
	}
	return validateNamespace(namespace) == nil && validateKey(key) == nil, nil
}

// Get returns the item at namespace and key, or nil when there is none (or
// it has expired). With refreshTTL, an item that has a TTL gets a new
// deadline of now plus its TTL.
func (s *Service) Get(ctx context.Context, namespace []string, key string, refreshTTL bool) (*Item, error) {
	acc, err := authorize(ctx, authz.Get, namespace, map[string]any{"key": key})
	if err != nil {
		return nil, err
	}
	namespace = acc.namespace
	ok, err := storable(namespace, key)
	if err != nil || !ok {
		return nil, err
	}
	now := s.now()
	var it storage.StoreItem
	it, err = storage.Read(ctx, s.db, func(tx *storage.Tx) (storage.StoreItem, error) { return tx.GetStoreItem(namespace, key, now) })
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !acc.admits(it.Value) {
		return nil, nil
	}
	if refreshTTL && it.TTLMinutes != nil {
		if err := s.refresh(ctx, []storage.StoreItem{it}); err != nil {
			return nil, err
		}
	}
	out := toItem(it)
	return &out, nil
}

// refresh moves the deadline of each of items that still exists and has a
// TTL to now plus that TTL.
func (s *Service) refresh(ctx context.Context, items []storage.StoreItem) error {
	now := s.now()
	return s.db.Update(ctx, func(tx *storage.Tx) error {
		for _, it := range items {
			if err := tx.RefreshStoreItem(it.Namespace, it.Key, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// Delete removes the item at namespace and key. Deleting a missing item is
// not an error.
func (s *Service) Delete(ctx context.Context, namespace []string, key string) error {
	acc, err := authorize(ctx, authz.Delete, namespace, map[string]any{"key": key})
	if err != nil {
		return err
	}
	namespace = acc.namespace
	ok, err := storable(namespace, key)
	if err != nil || !ok {
		return err
	}
	now := s.now()
	return s.writeIndexed(namespace, key, nil, func() error {
		return s.db.Update(ctx, func(tx *storage.Tx) error {
			if len(acc.filter) > 0 {
				// An item the caller may not read is missing to them.
				it, err := tx.GetStoreItem(namespace, key, now)
				if errors.Is(err, errdefs.ErrNotFound) || (err == nil && !acc.admits(it.Value)) {
					return nil
				}
				if err != nil {
					return err
				}
			}
			err := tx.DeleteStoreItem(namespace, key)
			if errors.Is(err, errdefs.ErrNotFound) {
				return nil
			}
			return err
		})
	})
}

// Search returns one page of the live items whose namespace starts with
// prefix and whose value matches filter and query (see the package
// documentation), newest update first. limit 0 means DefaultSearchLimit.
// With refreshTTL, each returned item that has a TTL gets a new deadline.
func (s *Service) Search(ctx context.Context, prefix []string, filter map[string]any, limit, offset int, query string, refreshTTL bool) ([]Item, error) {
	if limit < 0 || offset < 0 {
		return nil, invalidf("limit and offset must not be negative")
	}
	if limit == 0 {
		limit = DefaultSearchLimit
	}
	semantic := query != "" && s.index != nil
	textQuery := query
	if semantic {
		textQuery = ""
	}
	acc, err := authorize(ctx, authz.Search, prefix, map[string]any{"filter": filter, "query": query, "limit": limit, "offset": offset})
	if err != nil {
		return nil, err
	}
	prefix = acc.namespace
	match, err := newMatcher(filter, textQuery)
	if err != nil {
		return nil, err
	}
	match = acc.match(match)
	q := storage.StoreSearch{Prefix: prefix, Match: match, Now: s.now(), Limit: limit, Offset: offset}
	var queryVec []float32
	if semantic {
		vecs, err := s.embed(ctx, []string{query})
		if err != nil {
			return nil, err
		}
		queryVec = vecs[0]
		found, scores, ok, err := s.searchIndexed(ctx, prefix, match, queryVec, q.Now, limit, offset)
		if err != nil {
			return nil, err
		}
		if ok {
			return s.finishSearch(ctx, found, scores, refreshTTL)
		}
		// Every match is read with its vectors and ranked here; the page
		// is cut after ranking.
		q.Limit, q.Offset, q.WithVectors = 0, 0, true
	}
	var found []storage.StoreItem
	found, err = storage.Read(ctx, s.db, func(tx *storage.Tx) ([]storage.StoreItem, error) { return tx.SearchStoreItems(q) })
	if err != nil {
		return nil, err
	}
	var scores []*float64
	if semantic {
		found, scores = rankBySimilarity(found, queryVec)
		found, scores = pageSlice(found, offset, limit), pageSlice(scores, offset, limit)
	}
	return s.finishSearch(ctx, found, scores, refreshTTL)
}

// finishSearch refreshes the TTLs of a search page when asked and turns
// it into items with their scores (nil scores: none).
func (s *Service) finishSearch(ctx context.Context, found []storage.StoreItem, scores []*float64, refreshTTL bool) ([]Item, error) {
	if refreshTTL {
		var stale []storage.StoreItem
		for _, it := range found {
			if it.TTLMinutes != nil {
				stale = append(stale, it)
			}
		}
		if len(stale) > 0 {
			if err := s.refresh(ctx, stale); err != nil {
				return nil, err
			}
		}
	}
	out := make([]Item, 0, len(found))
	for i, it := range found {
		item := toItem(it)
		if scores != nil {
			item.Score = scores[i]
		}
		out = append(out, item)
	}
	return out, nil
}

// pageSlice returns the page of s at offset, at most limit long.
func pageSlice[T any](s []T, offset, limit int) []T {
	if offset >= len(s) {
		return nil
	}
	return s[offset:min(len(s), offset+limit)]
}

// ListNamespaces returns one page of the distinct namespaces holding live
// items that start with prefix and end with suffix ("*" matches any one
// label), each cut to maxDepth labels when it is set, sorted. limit 0 means
// DefaultNamespaceLimit.
func (s *Service) ListNamespaces(ctx context.Context, prefix, suffix []string, maxDepth *int, limit, offset int) ([][]string, error) {
	if limit < 0 || offset < 0 {
		return nil, invalidf("limit and offset must not be negative")
	}
	if maxDepth != nil && *maxDepth < 0 {
		return nil, invalidf("max_depth must not be negative")
	}
	if limit == 0 {
		limit = DefaultNamespaceLimit
	}
	acc, err := authorize(ctx, authz.ListNamespaces, prefix, map[string]any{"suffix": suffix, "max_depth": maxDepth, "limit": limit, "offset": offset})
	if err != nil {
		return nil, err
	}
	q := storage.StoreNamespaceQuery{Prefix: acc.namespace, Suffix: suffix, MaxDepth: maxDepth, Now: s.now(), Limit: limit, Offset: offset, Match: acc.match(nil)}
	out, err := storage.Read(ctx, s.db, func(tx *storage.Tx) ([][]string, error) { return tx.ListStoreNamespaces(q) })
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = [][]string{}
	}
	return out, nil
}

// Run deletes expired items and stale staged values (SweepStaged) once at
// start and then every sweep interval
// until ctx is cancelled. The server starts it in its own goroutine and
// cancels ctx (then waits for Run to return) on shutdown.
func (s *Service) Run(ctx context.Context) {
	t := time.NewTicker(s.sweepEvery)
	defer t.Stop()
	for {
		n, err := s.SweepExpired(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("store sweep failed", "err", err)
		} else if n > 0 {
			s.log.Debug("store items expired", "count", n)
		}
		n, err = s.SweepStaged(ctx)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("store sweep of staged values failed", "err", err)
		} else if n > 0 {
			s.log.Info("store values staged by puts that never finished deleted", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SweepStaged deletes the large values staged for puts that never stored
// their item (the server stopped in between), in batches of short
// transactions, and returns how many it deleted.
func (s *Service) SweepStaged(ctx context.Context) (int, error) {
	total := 0
	for {
		var n int
		err := s.db.Update(ctx, func(tx *storage.Tx) error {
			var err error
			n, err = tx.DeleteStaleStoreValues(time.Now(), stagedSweepBatch)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("sweep staged store values: %w", err)
		}
		total += n
		if n < stagedSweepBatch {
			return total, nil
		}
	}
}

// SweepExpired deletes every item that has expired by now, in batches of
// short transactions, and returns how many it deleted.
func (s *Service) SweepExpired(ctx context.Context) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		now := s.now()
		var n int
		err := s.db.Update(ctx, func(tx *storage.Tx) error {
			var err error
			n, err = tx.DeleteExpiredStoreItems(now, sweepBatch)
			return err
		})
		if err != nil {
			return total, fmt.Errorf("sweep expired store items: %w", err)
		}
		total += n
		if n < sweepBatch {
			return total, s.pruneIndex(ctx, total)
		}
	}
}

func toItem(it storage.StoreItem) Item {
	ns := it.Namespace
	if ns == nil {
		ns = []string{}
	}
	v := it.Value
	if v == nil {
		v = map[string]any{}
	}
	return Item{Namespace: ns, Key: it.Key, Value: v, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt}
}

// ParseNamespaceParam decodes the namespace query parameter of GET
// /store/items in any encoding clients use: one dot-joined string "a.b.c"
// (both SDKs), repeated parameters (namespace=a&namespace=b), a single
// label, or a JSON array string `["a","b"]`. No value, or one empty value,
// is the empty namespace.
func ParseNamespaceParam(values []string) []string {
	switch len(values) {
	case 0:
		return []string{}
	case 1:
	default:
		return append([]string(nil), values...)
	}
	v := strings.TrimSpace(values[0])
	if v == "" {
		return []string{}
	}
	if strings.HasPrefix(v, "[") {
		var labels []string
		if err := json.Unmarshal([]byte(v), &labels); err == nil {
			if labels == nil {
				labels = []string{}
			}
			return labels
		}
	}
	return strings.Split(values[0], ".")
}

// matcher builds the storage predicate for a filter and a text query.
func newMatcher(filter map[string]any, query string) (func(*storage.StoreItem) bool, error) {
	query = strings.ToLower(strings.TrimSpace(query))
	if len(filter) == 0 && query == "" {
		return nil, nil
	}
	if len(filter) > 0 {
		// Normalize Go-typed filters (ints, []string) to decoded JSON.
		raw, err := json.Marshal(filter)
		if err != nil {
			return nil, invalidf("filter is not JSON: %v", err)
		}
		filter = nil
		if err := json.Unmarshal(raw, &filter); err != nil {
			return nil, invalidf("filter is not JSON: %v", err)
		}
		if err := checkOperators(filter); err != nil {
			return nil, err
		}
	}
	return func(it *storage.StoreItem) bool {
		for k, want := range filter {
			v, present := it.Value[k]
			if !matchField(v, present, want) {
				return false
			}
		}
		return query == "" || containsText(it.Value, query)
	}, nil
}

var comparisonOps = map[string]bool{"$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true, "$in": true, "$nin": true}

// checkOperators rejects filter entries that use an operator we do not
// know, instead of silently matching nothing.
func checkOperators(filter map[string]any) error {
	for field, want := range filter {
		ops, ok := want.(map[string]any)
		if !ok {
			continue
		}
		for op, arg := range ops {
			if !strings.HasPrefix(op, "$") {
				continue
			}
			if !comparisonOps[op] {
				return invalidf("filter on %q: unsupported operator %q (supported: $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin)", field, op)
			}
			if _, isList := arg.([]any); (op == "$in" || op == "$nin") && !isList {
				return invalidf("filter on %q: %s takes a list", field, op)
			}
		}
	}
	return nil
}

// matchField reports whether a top-level value field matches one filter
// entry.
func matchField(v any, present bool, want any) bool {
	if ops, ok := want.(map[string]any); ok && len(ops) > 0 && allOps(ops) {
		for op, arg := range ops {
			if !compare(v, present, op, arg) {
				return false
			}
		}
		return true
	}
	return present && jsonx.Contains(v, want)
}

func allOps(m map[string]any) bool {
	for k := range m {
		if !comparisonOps[k] {
			return false
		}
	}
	return true
}

func compare(v any, present bool, op string, arg any) bool {
	equal := present && jsonx.Contains(v, arg) && jsonx.Contains(arg, v)
	switch op {
	case "$eq":
		return equal
	case "$ne":
		return !equal
	case "$in", "$nin":
		in := false
		for _, e := range arg.([]any) {
			in = in || (present && jsonx.Contains(v, e) && jsonx.Contains(e, v))
		}
		return in == (op == "$in")
	}
	if !present {
		return false
	}
	var c int
	switch a := v.(type) {
	case float64:
		b, ok := arg.(float64)
		if !ok {
			return false
		}
		c = cmpFloat(a, b)
	case string:
		b, ok := arg.(string)
		if !ok {
			return false
		}
		c = strings.Compare(a, b)
	default:
		return false
	}
	switch op {
	case "$gt":
		return c > 0
	case "$gte":
		return c >= 0
	case "$lt":
		return c < 0
	default: // $lte
		return c <= 0
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// containsText reports whether q (lower case) occurs in an object key or a
// scalar of v.
func containsText(v any, q string) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if strings.Contains(strings.ToLower(k), q) || containsText(e, q) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range t {
			if containsText(e, q) {
				return true
			}
		}
		return false
	case string:
		return strings.Contains(strings.ToLower(t), q)
	case float64:
		return strings.Contains(strconv.FormatFloat(t, 'f', -1, 64), q)
	case bool:
		return strings.Contains(strconv.FormatBool(t), q)
	case nil:
		return strings.Contains("null", q)
	default:
		raw, err := json.Marshal(t)
		return err == nil && strings.Contains(strings.ToLower(string(raw)), q)
	}
}
