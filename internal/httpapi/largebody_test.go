package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"agentserver/internal/httpapi"
	"agentserver/internal/testutil"
)

// largeValue is a store value of about size bytes once encoded, with what
// a pass-through must keep: escapes, non-ASCII text, characters
// encoding/json escapes for HTML, numbers, literals and nesting.
func largeValue(size int) map[string]any {
	line := `say "hi" \ <b>&amp;</b> héllo ✓ {[]} ` + strings.Repeat("x", 900)
	var lines []any
	for n := 0; n < size; n += len(line) + 16 {
		lines = append(lines, line)
	}
	return map[string]any{"lines": lines, "n": 1.5e3, "ok": true, "none": nil, "deep": map[string]any{"list": []any{1.0, "}", map[string]any{}}}}
}

// TestLargeStoreValueRoundTrips puts store values above the size from
// which bodies are checked in a lighter copy and the value is stored as
// sent, and reads them back as they were put.
func TestLargeStoreValueRoundTrips(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	for _, size := range []int{httpapi.LargeBodyBytes + 1000, 9 << 20} {
		value := largeValue(size)
		key := fmt.Sprintf("k%d", size)
		// Sent with spaces and a member order of its own: stored as sent,
		// it must still read back as the same value.
		raw, err := json.MarshalIndent(map[string]any{"value": value, "key": key, "namespace": []string{"docs", "big"}, "index": false}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) < httpapi.LargeBodyBytes {
			t.Fatalf("body of %d bytes is not large", len(raw))
		}
		s.Must(204, "PUT", "/store/items", string(raw))
		got := s.Must(200, "GET", "/store/items?namespace=docs.big&key="+url.QueryEscape(key), nil).Object(t)
		if !reflect.DeepEqual(got["value"], testutil.JSONRoundTrip(t, value)) {
			t.Fatalf("%d bytes: the value read back differs from the value put", size)
		}
	}
}

// TestLargeStoreBodyRefusedAsSmallOne checks that a large body is refused
// with the answer a small body with the same fault gets, and that nothing
// is stored.
func TestLargeStoreBodyRefusedAsSmallOne(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	big := largeValue(httpapi.LargeBodyBytes + 1000)
	small := map[string]any{"a": 1}
	for _, c := range []struct {
		name string
		body func(value any) map[string]any
	}{
		{"value is a list", func(v any) map[string]any {
			return map[string]any{"namespace": []string{"n"}, "key": "k", "value": []any{v}}
		}},
		{"key missing", func(v any) map[string]any { return map[string]any{"namespace": []string{"n"}, "value": v} }},
		{"namespace not a list", func(v any) map[string]any { return map[string]any{"namespace": "n", "key": "k", "value": v} }},
		{"key not a string", func(v any) map[string]any {
			return map[string]any{"namespace": []string{"n"}, "key": 7, "value": v}
		}},
	} {
		want := s.Do("PUT", "/store/items", c.body(small))
		got := s.Do("PUT", "/store/items", c.body(big))
		if want.Status != 422 || got.Status != want.Status {
			t.Fatalf("%s: large body answered %d, small one %d (want 422 for both): %s", c.name, got.Status, want.Status, got.Raw)
		}
		if got.Object(t)["message"] != want.Object(t)["message"] {
			t.Errorf("%s: large body answered %q, small one %q", c.name, got.Object(t)["message"], want.Object(t)["message"])
		}
	}
	if items := s.Must(200, "POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"n"}}).Object(t)["items"].([]any); len(items) != 0 {
		t.Fatalf("refused bodies stored %d items", len(items))
	}
}
