package store

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"time"

	"agentserver/internal/errdefs"
	"agentserver/internal/storage"
)

// vectorIndex keeps the vectors of every embedded item in memory so that a
// semantic search reads only its candidates from storage. Vectors are
// normalised and quantised to int8 with one scale per vector; scores
// computed here only choose candidates, whose exact scores are computed
// again from the stored float32 vectors.
type vectorIndex struct {
	mu     sync.RWMutex
	loaded bool
	slots  map[string]int // item key → position in entries
	items  []indexedItem
}

// indexedItem is one item's quantised vectors: vector i is codes[i*dims:
// (i+1)*dims] times scales[i]; its signs are bits[i*words:(i+1)*words]
// (bit set: component > 0), words being dims/64 rounded up.
type indexedItem struct {
	namespace []string
	key       string
	codes     []int8
	scales    []float32
	bits      []uint64
}

// candidate is an indexed item's position and approximate score.
type candidate struct {
	score float32
	slot  int
}

// indexHit names an item a search should read.
type indexHit struct {
	namespace []string
	key       string
}

// itemID is the index's key of an item: its labels and key, separated by
// bytes no label contains.
func itemID(namespace []string, key string) string {
	n := len(key) + len(namespace)
	for _, l := range namespace {
		n += len(l)
	}
	b := make([]byte, 0, n)
	for _, l := range namespace {
		b = append(b, l...)
		b = append(b, 0x1f)
	}
	return string(append(b, key...))
}

// ensureLoaded fills the index from storage on first use. The write lock is
// taken before the read, so a write that commits after the read began
// applies its change after the load.
func (x *vectorIndex) ensureLoaded(ctx context.Context, db *storage.DB) error {
	x.mu.RLock()
	loaded := x.loaded
	x.mu.RUnlock()
	if loaded {
		return nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.loaded {
		return nil
	}
	x.slots = map[string]int{}
	x.items = nil
	err := db.View(ctx, func(tx *storage.Tx) error {
		return tx.ForEachStoreVectors(func(namespace []string, key string, vecs [][]float32) error {
			x.setLocked(namespace, key, vecs)
			return nil
		})
	})
	x.loaded = err == nil
	return err
}

// invalidate makes the next search load the index again from storage
// (another replica changed vectors).
func (x *vectorIndex) invalidate() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.loaded, x.slots, x.items = false, nil, nil
}

// set replaces the vectors of an item (none removes it). Before the index
// is loaded it does nothing: the load reads the stored state.
func (x *vectorIndex) set(namespace []string, key string, vecs [][]float32) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.loaded {
		x.setLocked(namespace, key, vecs)
	}
}

func (x *vectorIndex) setLocked(namespace []string, key string, vecs [][]float32) {
	id := itemID(namespace, key)
	slot, ok := x.slots[id]
	if len(vecs) == 0 {
		if ok {
			x.removeSlot(id, slot)
		}
		return
	}
	it := quantise(namespace, key, vecs)
	if ok {
		x.items[slot] = it
		return
	}
	x.slots[id] = len(x.items)
	x.items = append(x.items, it)
}

// removeSlot drops the item at slot, moving the last item into its place.
func (x *vectorIndex) removeSlot(id string, slot int) {
	last := len(x.items) - 1
	if slot != last {
		moved := x.items[last]
		x.items[slot] = moved
		x.slots[itemID(moved.namespace, moved.key)] = slot
	}
	x.items[last] = indexedItem{}
	x.items = x.items[:last]
	delete(x.slots, id)
}

// prune drops the items whose vectors are no longer stored (expired and
// swept). Like the load, it locks before it reads.
func (x *vectorIndex) prune(ctx context.Context, db *storage.DB) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.loaded {
		return nil
	}
	var gone []indexedItem
	err := db.View(ctx, func(tx *storage.Tx) error {
		for _, it := range x.items {
			vecs, err := tx.StoreVectors(it.namespace, it.key)
			if err != nil {
				return err
			}
			if vecs == nil {
				gone = append(gone, it)
			}
		}
		return nil
	})
	for _, it := range gone {
		id := itemID(it.namespace, it.key)
		x.removeSlot(id, x.slots[id])
	}
	return err
}

// quantise normalises each vector and stores it as int8 codes with the
// scale that maps the largest component to ±127.
func quantise(namespace []string, key string, vecs [][]float32) indexedItem {
	dims := len(vecs[0])
	it := indexedItem{
		namespace: namespace, key: key,
		codes: make([]int8, len(vecs)*dims), scales: make([]float32, len(vecs)),
	}
	words := signWords(dims)
	it.bits = make([]uint64, len(vecs)*words)
	for i, v := range vecs {
		it.scales[i] = quantiseInto(it.codes[i*dims:(i+1)*dims], v)
		signsInto(it.bits[i*words:(i+1)*words], v)
	}
	return it
}

func signWords(dims int) int { return (dims + 63) / 64 }

// signsInto sets bit j of dst when v[j] > 0.
func signsInto(dst []uint64, v []float32) {
	for j, f := range v {
		if f > 0 {
			dst[j/64] |= 1 << (j % 64)
		}
	}
}

// quantiseInto writes the codes of v, normalised, into dst and returns
// their scale (0 for a zero vector, whose codes are all 0).
func quantiseInto(dst []int8, v []float32) float32 {
	var norm, peak float64
	for _, f := range v {
		norm += float64(f) * float64(f)
		peak = max(peak, math.Abs(float64(f)))
	}
	if norm == 0 {
		return 0
	}
	step := peak / 127
	for i, f := range v {
		dst[i] = int8(math.Round(float64(f) / step))
	}
	return float32(step / math.Sqrt(norm))
}

// top returns the up to k indexed items under prefix with the highest
// approximate score for query, best first. Two passes: every item under
// prefix is scored on its sign bits (Hamming distance, by all CPUs in
// parallel), and the best rescoreFactor×k of those on their int8 codes.
func (x *vectorIndex) top(prefix []string, query []float32, k int) []indexHit {
	q := make([]int8, len(query))
	qScale := quantiseInto(q, query)
	qBits := make([]uint64, signWords(len(query)))
	signsInto(qBits, query)
	x.mu.RLock()
	defer x.mu.RUnlock()
	coarse := x.bySigns(prefix, qBits, max(rescoreFactor*k, minRescored))
	for i, c := range coarse {
		coarse[i].score = x.items[c.slot].codeScore(q, qScale)
	}
	slices.SortFunc(coarse, func(a, b candidate) int { return cmp.Compare(b.score, a.score) })
	out := make([]indexHit, min(k, len(coarse)))
	for i := range out {
		it := &x.items[coarse[i].slot]
		out[i] = indexHit{it.namespace, it.key}
	}
	return out
}

// bySigns returns the up to k items under prefix whose sign bits are
// closest to q's, in no order.
func (x *vectorIndex) bySigns(prefix []string, q []uint64, k int) []candidate {
	parts := max(1, min(runtime.GOMAXPROCS(0), len(x.items)/4096))
	tops := make([]candidateHeap, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(x.items)/parts, (p+1)*len(x.items)/parts
		wg.Go(func() { tops[p] = x.signRange(lo, hi, prefix, q, k) })
	}
	wg.Wait()
	var all []candidate
	for _, h := range tops {
		all = append(all, h...)
	}
	if len(all) > k {
		slices.SortFunc(all, func(a, b candidate) int { return cmp.Compare(b.score, a.score) })
		all = all[:k]
	}
	return all
}

// signRange keeps the k items of items[lo:hi] under prefix with the fewest
// sign bits differing from q (score: minus that count).
func (x *vectorIndex) signRange(lo, hi int, prefix []string, q []uint64, k int) candidateHeap {
	h := make(candidateHeap, 0, k)
	words := len(q)
	for slot := lo; slot < hi; slot++ {
		it := &x.items[slot]
		if len(it.bits) < words || !hasPrefix(it.namespace, prefix) {
			continue
		}
		best := math.MinInt
		for i := 0; i+words <= len(it.bits); i += words {
			best = max(best, -hamming(q, it.bits[i:i+words]))
		}
		c := candidate{float32(best), slot}
		switch {
		case len(h) < k:
			heap.Push(&h, c)
		case c.score > h[0].score:
			h[0] = c
			heap.Fix(&h, 0)
		}
	}
	return h
}

// codeScore is the item's best approximate cosine similarity to the query
// codes q; -Inf when its vectors are of another length (stored before the
// configured dims changed).
func (it *indexedItem) codeScore(q []int8, qScale float32) float32 {
	dims := len(q)
	best := float32(math.Inf(-1))
	if len(it.codes) != len(it.scales)*dims {
		return best
	}
	for i, scale := range it.scales {
		best = max(best, float32(dotInt8(q, it.codes[i*dims:(i+1)*dims]))*scale*qScale)
	}
	return best
}

// hamming counts the bits that differ between a and b.
func hamming(a, b []uint64) int {
	b = b[:len(a)]
	n := 0
	for i := range a {
		n += bits.OnesCount64(a[i] ^ b[i])
	}
	return n
}

// dotInt8 is the dot product of two code vectors of equal length, four
// lanes at a time.
func dotInt8(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

func hasPrefix(namespace, prefix []string) bool {
	return len(namespace) >= len(prefix) && slices.Equal(namespace[:len(prefix)], prefix)
}

// candidateHeap is a min-heap on score: its root is the worst kept.
type candidateHeap []candidate

func (h candidateHeap) Len() int           { return len(h) }
func (h candidateHeap) Less(i, j int) bool { return h[i].score < h[j].score }
func (h candidateHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *candidateHeap) Push(v any)        { *h = append(*h, v.(candidate)) }
func (h *candidateHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// Candidates a semantic search reads from storage: candidateFactor times
// the items up to the end of its page, and at least minCandidates.
// The sign pass keeps rescoreFactor times the candidates, and at least
// minRescored, for the int8 pass.
const (
	candidateFactor = 4
	minCandidates   = 64
	rescoreFactor   = 16
	minRescored     = 1024
)

// writeIndexed runs write, the transaction that sets the vectors of an
// item (none: the item has none or is deleted), and then mirrors them in
// the in-memory index. Writes of one item are serialised, so the index
// takes their changes in commit order.
func (s *Service) writeIndexed(namespace []string, key string, vecs [][]float32, write func() error) error {
	if s.index == nil {
		return write()
	}
	mu := &s.writeLocks[maphash.String(writeLockSeed, itemID(namespace, key))%uint64(len(s.writeLocks))]
	mu.Lock()
	defer mu.Unlock()
	if err := write(); err != nil {
		return err
	}
	s.vectors.set(namespace, key, vecs)
	return nil
}

var writeLockSeed = maphash.MakeSeed()

// pruneIndex drops swept items from the in-memory index once a sweep
// deleted some.
func (s *Service) pruneIndex(ctx context.Context, swept int) error {
	if s.index == nil || swept == 0 {
		return nil
	}
	if err := s.vectors.prune(ctx, s.db); err != nil {
		return fmt.Errorf("prune store vector index: %w", err)
	}
	return nil
}

// searchIndexed answers a semantic search from the in-memory index: the
// best candidates by approximate score are read from storage, checked
// (alive, passing match) and scored exactly on their stored vectors. It
// reports false when the checked candidates do not fill the page (a
// selective filter, or a page reaching the items without vectors); the
// caller then ranks every match.
func (s *Service) searchIndexed(ctx context.Context, prefix []string, match func(*storage.StoreItem) bool, query []float32, now time.Time, limit, offset int) ([]storage.StoreItem, []*float64, bool, error) {
	if err := s.vectors.ensureLoaded(ctx, s.db); err != nil {
		return nil, nil, false, fmt.Errorf("load store vector index: %w", err)
	}
	want := offset + limit
	hits := s.vectors.top(prefix, query, max(candidateFactor*want, minCandidates))
	var items []storage.StoreItem
	err := s.db.View(ctx, func(tx *storage.Tx) error {
		for _, h := range hits {
			it, err := tx.GetStoreItem(h.namespace, h.key, now)
			if errors.Is(err, errdefs.ErrNotFound) {
				continue // deleted or expired since the index was read
			}
			if err != nil {
				return err
			}
			if match != nil && !match(&it) {
				continue
			}
			if it.Vectors, err = tx.StoreVectors(h.namespace, h.key); err != nil {
				return err
			}
			if it.Vectors != nil {
				items = append(items, it)
			}
		}
		return nil
	})
	if err != nil || len(items) < want {
		return nil, nil, false, err
	}
	sortNewestFirst(items)
	items, scores := rankBySimilarity(items, query)
	return pageSlice(items, offset, limit), pageSlice(scores, offset, limit), true, nil
}

// sortNewestFirst orders items as a store search does before ranking:
// newest update first, then namespace and key.
func sortNewestFirst(items []storage.StoreItem) {
	slices.SortStableFunc(items, func(a, b storage.StoreItem) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		if c := slices.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
}
