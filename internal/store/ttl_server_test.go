package store_test

import (
	"agentserver/internal/testutil"
	"testing"
	"time"
)

// storeTTLGraphs is a langgraph.json whose store sweeper runs every few
// milliseconds and whose items expire after 60 ms by default.
const storeTTLGraphs = `{"graphs": {"echo": "builtin:echo"},
	"store": {"ttl": {"default_ttl": 0.001, "refresh_on_read": false, "sweep_interval_minutes": 0.0002}}}`

// store.ttl gives items put without a ttl the default one; with
// refresh_on_read false, reads do not extend it.
func TestStoreDefaultTTL(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: storeTTLGraphs})
	s.Must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"tmp"}, "key": "k", "value": map[string]any{"x": 1}})
	s.Must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"tmp"}, "key": "long", "value": map[string]any{"x": 2}, "ttl": 60})
	testutil.Eventually(t, 10*time.Second, "the item to expire at the default ttl", func() bool {
		return s.Must(200, "GET", "/store/items?namespace=tmp&key=k", nil).JSON == nil
	})
	if s.Must(200, "GET", "/store/items?namespace=tmp&key=long", nil).JSON == nil {
		t.Fatal("an item with its own ttl expired at the default one")
	}
}
