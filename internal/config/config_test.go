package config

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func noEnv(string) string { return "" }

func TestParsePrecedence(t *testing.T) {
	env := map[string]string{EnvAddr: "127.0.0.1:9999", EnvDataDir: "/from/env", EnvJobs: "3",
		EnvShutdownTimeout: "3s", EnvStreamRetention: "1h", EnvShell: "true", EnvMaxSub: "4"}
	c, err := Parse([]string{"--data-dir", "/from/flag", "--stream-retention", "2m"}, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:9999" || c.DataDir != "/from/flag" || c.Jobs != 3 || c.GraphsFile != "./langgraph.json" ||
		c.ShutdownTimeout != 3*time.Second || c.StreamRetention != 2*time.Minute || !c.EnableShell || c.MaxSubagents != 4 {
		t.Fatalf("config = %+v", c)
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse(nil, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c != Default() {
		t.Fatalf("defaults = %+v, want %+v", c, Default())
	}
}

func TestParseRejects(t *testing.T) {
	for _, args := range [][]string{
		{"--addr", "nope"},
		{"--n-jobs", "0"},
		{"--log-level", "loud"},
		{"--log-format", "xml"},
		{"--max-crons", "-1"},
		{"extra"},
	} {
		if _, err := Parse(args, noEnv); err == nil {
			t.Errorf("%s: accepted", strings.Join(args, " "))
		}
	}
}

// A bare port is that port on the default host; host:port and :port stay
// as written.
func TestParseAddrReadsABarePort(t *testing.T) {
	for in, want := range map[string]string{"8080": "127.0.0.1:8080", "0.0.0.0:9000": "0.0.0.0:9000", ":7000": ":7000"} {
		c, err := Parse([]string{"--addr", in}, noEnv)
		if err != nil || c.Addr != want {
			t.Errorf("--addr %s: %q, %v; want %q", in, c.Addr, err, want)
		}
	}
	if _, err := Parse([]string{"--addr", "70000"}, noEnv); err == nil {
		t.Error("--addr 70000 (no such port) accepted")
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
		c, err := Parse(tc.args, func(k string) string { return tc.env[k] })
		if err != nil || c.RunTimeout != tc.want {
			t.Errorf("env %v args %v: %v, %v; want %v", tc.env, tc.args, c.RunTimeout, err, tc.want)
		}
	}
	for _, v := range []string{"soon", "-5"} {
		if _, err := Parse(nil, func(k string) string { return map[string]string{EnvBGJobTimeout: v}[k] }); err == nil {
			t.Errorf("%s=%q accepted", EnvBGJobTimeout, v)
		}
	}
	if _, err := Parse([]string{"--run-stop-grace", "0s"}, func(string) string { return "" }); err == nil {
		t.Error("a zero stop grace was accepted")
	}
}

func TestUsageErrorsSayWhatIsWanted(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--shutdown-timeout", "10"}, nil, `invalid value "10" for flag --shutdown-timeout: want a duration with a unit, such as 30s, 10m or 1h`},
		{nil, map[string]string{EnvStreamRetention: "600"}, `AGENTSERVER_STREAM_RETENTION="600": want a duration with a unit, such as 30s, 10m or 1h`},
		{nil, map[string]string{EnvJobs: "lots"}, `AGENTSERVER_N_JOBS="lots": want a whole number`},
		{nil, map[string]string{EnvShell: "yes please"}, `AGENTSERVER_ENABLE_SHELL="yes please": want true or false`},
		{[]string{"--nope"}, nil, "unknown flag --nope"},
	} {
		_, err := Parse(c.args, func(k string) string { return c.env[k] })
		if !errors.Is(err, ErrUsage) || err.Error() != c.want {
			t.Errorf("%v %v: error %v, want usage error %q", c.args, c.env, err, c.want)
		}
	}
}

func TestHelpAndVersionFlags(t *testing.T) {
	if _, err := Parse([]string{"-h"}, noEnv); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	if _, err := Parse([]string{"--version"}, noEnv); !errors.Is(err, ErrVersion) {
		t.Errorf("--version: %v", err)
	}
	var help bytes.Buffer
	Usage(&help)
	for _, o := range options {
		if !strings.Contains(help.String(), "--"+o.name) || !strings.Contains(help.String(), "env "+o.env) {
			t.Errorf("help lacks --%s or its env %s", o.name, o.env)
		}
	}
}

func TestDurationsReadAsWritten(t *testing.T) {
	for d, want := range map[time.Duration]string{10 * time.Minute: "10m", time.Hour: "1h", 90 * time.Minute: "1h30m", 10 * time.Second: "10s", 1500 * time.Millisecond: "1.5s"} {
		v := durationValue(d)
		if got := v.String(); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

func TestParseMetricsAddr(t *testing.T) {
	c, err := Parse(nil, func(k string) string { return map[string]string{EnvMetricsAddr: "127.0.0.1:9464"}[k] })
	if err != nil || c.MetricsAddr != "127.0.0.1:9464" {
		t.Fatalf("from the environment: %q, %v", c.MetricsAddr, err)
	}
	_, err = Parse([]string{"--metrics-addr", "9464"}, noEnv)
	if err == nil || !strings.Contains(err.Error(), `metrics-addr "9464"`) {
		t.Fatalf("a port without a host: err = %v, want one naming metrics-addr", err)
	}
}

// --js-node-args (or its environment variable) keeps the node options as
// written; the server splits them at spaces.
func TestParseJSNodeArgs(t *testing.T) {
	c, err := Parse(nil, func(k string) string { return map[string]string{EnvJSNodeArgs: "--cpu-prof --cpu-prof-dir=prof"}[k] })
	if err != nil || c.JSNodeArgs != "--cpu-prof --cpu-prof-dir=prof" {
		t.Fatalf("from the environment: %q, %v", c.JSNodeArgs, err)
	}
	c, err = Parse([]string{"--js-node-args", "--max-semi-space-size=64"}, func(k string) string { return map[string]string{EnvJSNodeArgs: "--cpu-prof"}[k] })
	if err != nil || c.JSNodeArgs != "--max-semi-space-size=64" {
		t.Fatalf("the flag over the environment: %q, %v", c.JSNodeArgs, err)
	}
}

// --database-url (or its environment variable) selects PostgreSQL; a value
// that is not a postgres URL is refused without echoing it (it may hold a
// password).
func TestParseDatabaseURL(t *testing.T) {
	const url = "postgres://agent:secret@127.0.0.1:5432/agents"
	c, err := Parse(nil, func(k string) string { return map[string]string{EnvDatabaseURL: url}[k] })
	if err != nil || c.DatabaseURL != url {
		t.Fatalf("from env: %q, %v", c.DatabaseURL, err)
	}
	c, err = Parse([]string{"--database-url", "postgresql://h/db"}, noEnv)
	if err != nil || c.DatabaseURL != "postgresql://h/db" {
		t.Fatalf("from flag: %q, %v", c.DatabaseURL, err)
	}
	_, err = Parse([]string{"--database-url", "mysql://u:secret@h/db"}, noEnv)
	if err == nil || !strings.Contains(err.Error(), "database-url") || strings.Contains(err.Error(), "secret") {
		t.Fatalf("mysql url: %v", err)
	}
}

// README.md lists every flag with its environment variable, and links every
// doc, so that a new flag or doc cannot be left out of it.
func TestReadmeListsEveryFlagAndDoc(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	for _, o := range options {
		if !strings.Contains(readme, "| `--"+o.name+"` | `"+o.env+"`") {
			t.Errorf("README.md's flag table lacks --%s (%s)", o.name, o.env)
		}
	}
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs: %v %v", docs, err)
	}
	for _, d := range docs {
		if name := "docs/" + filepath.Base(d); !strings.Contains(readme, "]("+name+")") {
			t.Errorf("README.md does not link %s", name)
		}
	}
}
