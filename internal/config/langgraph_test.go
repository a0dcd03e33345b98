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

// TestSectionErrorLines pins the one line a mistake in a section of
// langgraph.json gets; keys of other sections are left to their readers.
func TestSectionErrorLines(t *testing.T) {
	cases := []struct {
		body string
		load func(string) error
		want string
	}{
		{`{"store": {"ttl": {"default_ttl": "one day"}}}`, loadTTLs, `%s:1:35: store.ttl.default_ttl: want a number, got the string "one day"`},
		{`{"checkpointer": {"ttl": {"stratgy": "delete"}}}`, loadTTLs, `%s:1:27: unknown key "stratgy" in checkpointer.ttl (did you mean "strategy"?)`},
		{`{"store": {"index": {"dims": "1536", "embed": "openai:m"}}}`, loadStoreIndex, `%s:1:30: store.index.dims: want a whole number, got the string "1536"`},
		{`{"auth": {"owner_scope": true}}`, loadAuth, `%s:1:11: unknown key "owner_scope" in auth (did you mean "owner_scoped"?)`},
		{`{"auth": {"jwt": {"issuer": 5}}}`, loadAuth, `%s:1:29: auth.jwt.issuer: want a string, got the number 5`},
		{"{\"graphs\": {}\n\"store\": {}}", loadAuth, `%s:2:1: JSON syntax: invalid character '"' after object key:value pair`},
	}
	for _, c := range cases {
		p := writeFile(t, c.body)
		if err := c.load(p); err == nil || err.Error() != strings.ReplaceAll(c.want, "%s", p) {
			t.Errorf("%s:\ngot  %v\nwant %s", c.body, err, strings.ReplaceAll(c.want, "%s", p))
		}
	}
	// Each reader leaves the others' keys alone.
	p := writeFile(t, `{"graphs": {"a": "builtin:echo"}, "python_version": "3.12", "checkpointer": {"ttl": {"default_ttl": 5}, "serde": {}},
		"store": {"ttl": {"default_ttl": 5}, "index": {"dims": 2, "embed": "openai:m"}}, "auth": {"owner_key": "owner"}}`)
	for name, load := range map[string]func(string) error{"ttl": loadTTLs, "index": loadStoreIndex, "auth": loadAuth} {
		if err := load(p); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func loadTTLs(p string) error       { _, err := LoadTTLs(p); return err }
func loadStoreIndex(p string) error { _, err := LoadStoreIndex(p); return err }
func loadAuth(p string) error       { _, err := LoadAuth(p); return err }

func TestCheckGraphsFile(t *testing.T) {
	dir := t.TempDir()
	for path, want := range map[string]string{
		filepath.Join(dir, "langgraph.json"): "--config " + filepath.Join(dir, "langgraph.json") + ": no such file (run the server where your langgraph.json is, or name it with --config or AGENTSERVER_CONFIG)",
		dir:                                  "--config " + dir + ": is a directory; name the langgraph.json file in it",
	} {
		if err := CheckGraphsFile(path); err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	}
	if err := CheckGraphsFile(writeFile(t, "{}")); err != nil {
		t.Errorf("an existing file: %v", err)
	}
}
