package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "langgraph.json")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadTTLs(t *testing.T) {
	got, err := LoadTTLs(writeFile(t, `{"graphs": {"a": "builtin:echo"},
		"checkpointer": {"ttl": {"strategy": "keep_latest", "default_ttl": 43200, "sweep_interval_minutes": 60, "sweep_limit": 50}},
		"store": {"ttl": {"default_ttl": 10, "refresh_on_read": false, "sweep_interval_minutes": 0.5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := TTLs{
		Threads: ThreadTTL{Strategy: "keep_latest", DefaultTTL: 43200, SweepInterval: time.Hour, SweepLimit: 50},
		Store:   StoreTTL{DefaultTTL: 10, RefreshOnRead: false, SweepInterval: 30 * time.Second},
	}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// Without the sections: no default TTLs, reads refresh.
	got, err = LoadTTLs(writeFile(t, `{"graphs": {"a": "builtin:echo"}, "store": {}}`))
	if err != nil || got != (TTLs{Store: StoreTTL{RefreshOnRead: true}}) {
		t.Fatalf("defaults: %+v, %v", got, err)
	}
	got, err = LoadTTLs(writeFile(t, `{"checkpointer": {"ttl": {"default_ttl": 5}}}`))
	if err != nil || got.Threads.Strategy != "delete" {
		t.Fatalf("strategy default: %+v, %v", got, err)
	}
}

func TestLoadTTLsRejects(t *testing.T) {
	for body, field := range map[string]string{
		`{"checkpointer": {"ttl": {"strategy": "archive"}}}`:        "checkpointer.ttl.strategy",
		`{"checkpointer": {"ttl": {"default_ttl": 0}}}`:             "checkpointer.ttl.default_ttl",
		`{"checkpointer": {"ttl": {"sweep_interval_minutes": -1}}}`: "checkpointer.ttl.sweep_interval_minutes",
		`{"store": {"ttl": {"default_ttl": -3}}}`:                   "store.ttl.default_ttl",
		`{"store": {"ttl": {"sweep_interval_minutes": 1e12}}}`:      "store.ttl.sweep_interval_minutes",
		`{"store": {"ttl": {"refresh_on_read": "yes"}}}`:            "refresh_on_read",
		`{"checkpointer": {"ttl": {"default_ttl": "one day"}}}`:     "default_ttl",
	} {
		_, err := LoadTTLs(writeFile(t, body))
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want an error naming %s", body, err, field)
		}
	}
}
