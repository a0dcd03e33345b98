package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"agentserver/internal/storage"
)

// Embedder turns texts into vectors, one per text, in order. The server
// gives a client of the OpenAI-compatible /v1/embeddings endpoint.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// IndexConfig turns semantic search on (store.index in langgraph.json).
type IndexConfig struct {
	// Dims is the length every vector must have.
	Dims int
	// Fields are the value paths embedded when a put names none.
	Fields   []string
	Embedder Embedder
}

// ConfigureIndex turns semantic search on. It must be called before the
// service is used.
func (s *Service) ConfigureIndex(c IndexConfig) {
	if len(c.Fields) == 0 {
		c.Fields = []string{"$"}
	}
	s.index = &c
}

// vectorsFor embeds the texts of value at the paths index selects: false
// embeds nothing, a list overrides the configured fields. Without an index
// configuration nothing is embedded.
func (s *Service) vectorsFor(ctx context.Context, value map[string]any, index any) ([][]float32, error) {
	if !s.embeds(index) {
		return nil, nil
	}
	paths := s.index.Fields
	if list, ok := index.([]string); ok {
		paths = list
	}
	var texts []string
	for _, p := range paths {
		texts = append(texts, textsAt(value, p)...)
	}
	if len(texts) == 0 {
		return nil, nil
	}
	return s.embed(ctx, texts)
}

// embeds reports whether an item written with the index directive index
// is embedded: semantic search is configured and index is not false.
func (s *Service) embeds(index any) bool {
	return s.index != nil && index != false
}

// embed calls the embedder and checks the vectors' length.
func (s *Service) embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := s.index.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed store text: %w", err)
	}
	for _, v := range vecs {
		if len(v) != s.index.Dims {
			return nil, fmt.Errorf("embed store text: the model returned %d dimensions, store.index.dims is %d", len(v), s.index.Dims)
		}
	}
	return vecs, nil
}

// textsAt returns the texts at a field path of value: "$" is the whole
// value as JSON; otherwise keys separated by dots, with [n] or [*] to pick
// one or every element of a list ("a.b", "tags[*]", "steps[0].text"). A
// string is its own text, anything else its JSON; a missing path has none.
func textsAt(value map[string]any, path string) []string {
	if path == "$" {
		return []string{jsonText(value)}
	}
	nodes := []any{value}
	for _, seg := range pathSegments(path) {
		var next []any
		for _, n := range nodes {
			next = append(next, step(n, seg)...)
		}
		nodes = next
	}
	out := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if s, ok := n.(string); ok {
			out = append(out, s)
		} else if n != nil {
			out = append(out, jsonText(n))
		}
	}
	return out
}

// pathSegments splits "a.b[0][*]" into "a", "b", "[0]", "[*]".
func pathSegments(path string) []string {
	var out []string
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			i := strings.IndexByte(part[1:], '[') + 1
			if i == 0 {
				i = len(part)
			}
			out = append(out, part[:i])
			part = part[i:]
		}
	}
	return out
}

// step follows one path segment from n.
func step(n any, seg string) []any {
	if sel, ok := strings.CutPrefix(seg, "["); ok {
		list, isList := n.([]any)
		sel = strings.TrimSuffix(sel, "]")
		if !isList {
			return nil
		}
		if sel == "*" {
			return list
		}
		i, err := strconv.Atoi(sel)
		if i < 0 {
			i += len(list)
		}
		if err != nil || i < 0 || i >= len(list) {
			return nil
		}
		return []any{list[i]}
	}
	m, ok := n.(map[string]any)
	if !ok {
		return nil
	}
	v, ok := m[seg]
	if !ok {
		return nil
	}
	return []any{v}
}

func jsonText(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

// rankBySimilarity orders items by their best cosine similarity to query,
// highest first, and sets each one's score; items without vectors follow
// in their previous order, without a score.
func rankBySimilarity(items []storage.StoreItem, query []float32) ([]storage.StoreItem, []*float64) {
	type ranked struct {
		item  storage.StoreItem
		score *float64
	}
	rs := make([]ranked, len(items))
	for i, it := range items {
		rs[i].item = it
		for _, v := range it.Vectors {
			c := cosine(query, v)
			if rs[i].score == nil || c > *rs[i].score {
				rs[i].score = &c
			}
		}
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i].score, rs[j].score
		switch {
		case a == nil:
			return false
		case b == nil:
			return true
		}
		return *a > *b
	})
	out, scores := make([]storage.StoreItem, len(rs)), make([]*float64, len(rs))
	for i, r := range rs {
		out[i], scores[i] = r.item, r.score
	}
	return out, scores
}

// cosine is the cosine similarity of two vectors; 0 when either is zero or
// their lengths differ (vectors stored before store.index.dims changed).
func cosine(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// Notice follows a change another replica committed to the shared
// database: when it changed embedding vectors, the in-memory vector index
// is reloaded at the next search.
func (s *Service) Notice(n storage.Notice) {
	if n.StoreVectors && !n.Local {
		s.vectors.invalidate()
	}
}
