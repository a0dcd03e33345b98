package config

import (
	"slices"
	"strings"
	"testing"
)

func TestLoadStoreIndex(t *testing.T) {
	ix, err := LoadStoreIndex(writeFile(t, `{"graphs": {}, "store": {"index": {"dims": 8, "embed": "openai:emb-small"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if !ix.Enabled() || ix.Dims != 8 || ix.Model != "emb-small" || !slices.Equal(ix.Fields, []string{"$"}) {
		t.Fatalf("index = %+v", ix)
	}
	ix, err = LoadStoreIndex(writeFile(t, `{"graphs": {}, "store": {"ttl": {}}}`))
	if err != nil || ix.Enabled() {
		t.Fatalf("without store.index: %+v, %v", ix, err)
	}
}

func TestLoadStoreIndexRejects(t *testing.T) {
	for body, want := range map[string]string{
		`{"store": {"index": {"dims": 8, "embed": "cohere:x"}}}`:                 "openai:<model>",
		`{"store": {"index": {"dims": 8, "embed": {"path": "x.py"}}}}`:           "openai:<model>",
		`{"store": {"index": {"dims": 0, "embed": "openai:x"}}}`:                 "dims",
		`{"store": {"index": {"dims": 8, "embed": "openai:x", "fields": [""]}}}`: "fields",
		`{"store": {"index": {"dims": "8", "embed": "openai:x"}}}`:               "store.index",
	} {
		_, err := LoadStoreIndex(writeFile(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want one naming %q", body, err, want)
		}
	}
}

func TestParseCronFlags(t *testing.T) {
	c, err := Parse([]string{"--cron-seconds", "--max-crons", "5"}, noEnv)
	if err != nil || !c.CronSeconds || c.MaxCrons != 5 {
		t.Fatalf("config = %+v, %v", c, err)
	}
	c, err = Parse(nil, func(k string) string { return map[string]string{EnvCronSeconds: "true", EnvMaxCrons: "0"}[k] })
	if err != nil || !c.CronSeconds || c.MaxCrons != 0 {
		t.Fatalf("from env: %+v, %v", c, err)
	}
}
