package config

import (
	"io"
	"strings"
	"testing"
)

func TestParsePrecedence(t *testing.T) {
	env := map[string]string{EnvAddr: "127.0.0.1:9999", EnvDataDir: "/from/env", EnvJobs: "3"}
	c, err := Parse([]string{"--data-dir", "/from/flag"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9999" || c.DataDir != "/from/flag" || c.Jobs != 3 || c.GraphsFile != "./langgraph.json" {
		t.Fatalf("config = %+v", c)
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse(nil, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:2024" || c.DataDir != "./data" || c.APIKey != "" {
		t.Fatalf("defaults = %+v", c)
	}
}

func TestParseRejects(t *testing.T) {
	for _, args := range [][]string{
		{"--addr", "nope"},
		{"--n-jobs", "0"},
		{"--log-level", "loud"},
		{"extra"},
	} {
		if _, err := Parse(args, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("%s: accepted", strings.Join(args, " "))
		}
	}
}
