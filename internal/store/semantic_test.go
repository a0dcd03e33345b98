package store_test

import (
	"context"
	"math"
	"testing"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/storage"
	"agentserver/internal/testutil"
)

const semanticGraphs = `{"graphs": {"echo": "builtin:echo"},
	"store": {"index": {"dims": 64, "embed": "openai:scripted-embedding", "fields": ["text"]}}}`

// semanticServer starts a server whose store embeds with the scripted
// model's /v1/embeddings.
func semanticServer(t *testing.T) *testutil.Server {
	t.Helper()
	model := scripted.New()
	t.Cleanup(model.Close)
	t.Setenv("OPENAI_BASE_URL", model.URL())
	t.Setenv("OPENAI_API_KEY", "test-key")
	return testutil.StartServer(t, testutil.Options{Graphs: semanticGraphs})
}

// similarity is the score the server should give text for query.
func similarity(query, text string) float64 {
	q, v := scripted.Embed(query, 64), scripted.Embed(text, 64)
	var dot float64
	for i := range q {
		dot += float64(q[i]) * float64(v[i])
	}
	return dot
}

func put(t *testing.T, s *testutil.Server, ns []string, key string, value map[string]any, index any) {
	t.Helper()
	body := map[string]any{"namespace": ns, "key": key, "value": value}
	if index != nil {
		body["index"] = index
	}
	s.Must(204, "PUT", "/store/items", body)
}

func searchKeys(t *testing.T, s *testutil.Server, body map[string]any) ([]string, []any) {
	t.Helper()
	var keys []string
	var scores []any
	for _, it := range s.Must(200, "POST", "/store/items/search", body).Object(t)["items"].([]any) {
		m := it.(map[string]any)
		keys = append(keys, m["key"].(string))
		scores = append(scores, m["score"])
	}
	return keys, scores
}

// A query ranks items by the similarity of their indexed fields, with the
// score; filters, the namespace prefix and paging still apply; an item put
// with index false has no vectors and comes last without a score.
func TestStoreSemanticSearch(t *testing.T) {
	s := semanticServer(t)
	mem := []string{"mem", "u1"}
	put(t, s, mem, "pizza", map[string]any{"text": "I love pizza", "kind": "food"}, nil)
	put(t, s, mem, "plumber", map[string]any{"text": "I am a plumber", "kind": "job"}, nil)
	put(t, s, mem, "twice", map[string]any{"text": "pizza pizza every day", "kind": "food"}, nil)
	put(t, s, mem, "hidden", map[string]any{"text": "pizza", "kind": "food"}, false)
	put(t, s, []string{"other"}, "elsewhere", map[string]any{"text": "pizza"}, nil)

	keys, scores := searchKeys(t, s, map[string]any{"namespace_prefix": []string{"mem"}, "query": "pizza", "limit": 10})
	want := []string{"twice", "pizza", "plumber", "hidden"}
	if len(keys) != len(want) {
		t.Fatalf("keys = %v, want %v", keys, want)
	}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("keys = %v, want %v", keys, want)
		}
	}
	texts := []string{"pizza pizza every day", "I love pizza", "I am a plumber"}
	for i, text := range texts {
		got, ok := scores[i].(float64)
		if !ok || math.Abs(got-similarity("pizza", text)) > 1e-5 {
			t.Fatalf("score of %q = %v, want %v", text, scores[i], similarity("pizza", text))
		}
	}
	if scores[3] != nil {
		t.Fatalf("an item put with index false has score %v", scores[3])
	}

	keys, _ = searchKeys(t, s, map[string]any{"namespace_prefix": []string{"mem"}, "query": "pizza", "filter": map[string]any{"kind": "food"}, "limit": 1, "offset": 1})
	if len(keys) != 1 || keys[0] != "pizza" {
		t.Fatalf("filtered second page = %v, want [pizza]", keys)
	}
	keys, _ = searchKeys(t, s, map[string]any{"namespace_prefix": []string{"other"}, "query": "plumber"})
	if len(keys) != 1 || keys[0] != "elsewhere" {
		t.Fatalf("other namespace = %v", keys)
	}
	if err := s.DB().View(context.Background(), func(tx *storage.Tx) error { return tx.CheckStoreVectors() }); err != nil {
		t.Fatal(err)
	}
}

// A put's index list overrides the configured fields; re-putting with
// index false drops the vectors; deleting an item deletes its vectors.
func TestStoreSemanticIndexOverride(t *testing.T) {
	s := semanticServer(t)
	ns := []string{"docs"}
	put(t, s, ns, "a", map[string]any{"title": "pizza recipes", "text": "flour water yeast"}, []string{"title"})
	put(t, s, ns, "b", map[string]any{"title": "plumbing", "text": "pizza recipes"}, nil)
	put(t, s, ns, "c", map[string]any{"tags": []any{"tools", "pizza recipes"}}, []string{"tags[*]"})
	_, scores := searchKeys(t, s, map[string]any{"namespace_prefix": ns, "query": "pizza recipes"})
	for i, sc := range scores {
		if sc != 1.0 && math.Abs(sc.(float64)-1) > 1e-5 {
			t.Fatalf("item %d scored %v, want 1 (its indexed field equals the query)", i, sc)
		}
	}
	put(t, s, ns, "a", map[string]any{"title": "pizza recipes"}, false)
	keys, scores := searchKeys(t, s, map[string]any{"namespace_prefix": ns, "query": "pizza recipes"})
	if keys[len(keys)-1] != "a" || scores[len(scores)-1] != nil {
		t.Fatalf("after index false: keys %v scores %v, want a last without score", keys, scores)
	}
	s.Must(204, "DELETE", "/store/items", map[string]any{"namespace": ns, "key": "b"})
	if err := s.DB().View(context.Background(), func(tx *storage.Tx) error { return tx.CheckStoreVectors() }); err != nil {
		t.Fatal(err)
	}
	var n int
	_ = s.DB().View(context.Background(), func(tx *storage.Tx) error {
		n = tx.CountStoreVectors()
		return nil
	})
	if n != 1 {
		t.Fatalf("%d vector records left, want 1 (item c)", n)
	}
}
