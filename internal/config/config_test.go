package config

import (
	"io"
	"strings"
	"testing"
	"time"
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

func TestParseRunTimeout(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want time.Duration
	}{
		{nil, nil, time.Hour},
		{map[string]string{EnvBGJobTimeout: "90"}, nil, 90 * time.Second},
		{map[string]string{EnvBGJobTimeout: "90", EnvRunTimeout: "2m"}, nil, 2 * time.Minute},
		{map[string]string{EnvRunTimeout: "1.5"}, nil, 1500 * time.Millisecond},
		{map[string]string{EnvRunTimeout: "2m"}, []string{"--run-timeout", "0"}, 0},
	} {
		c, err := Parse(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
		if err != nil || c.RunTimeout != tc.want {
			t.Errorf("env %v args %v: %v, %v; want %v", tc.env, tc.args, c.RunTimeout, err, tc.want)
		}
	}
	for _, v := range []string{"soon", "-5"} {
		if _, err := Parse(nil, func(k string) string { return map[string]string{EnvBGJobTimeout: v}[k] }, io.Discard); err == nil {
			t.Errorf("%s=%q accepted", EnvBGJobTimeout, v)
		}
	}
	if _, err := Parse([]string{"--run-stop-grace", "0s"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Error("a zero stop grace was accepted")
	}
}
