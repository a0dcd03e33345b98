package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"agentserver/internal/config"
	"agentserver/internal/testutil/pgtest"
)

// result is how a run of the binary ended.
type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runBinary runs the server binary to its end (bounded by a minute) with
// no model configured and returns what it printed.
func runBinary(t *testing.T, bin string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(cleanEnv(), env...)
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%v did not exit within a minute\nstderr:\n%s", args, r.stderr)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// cleanEnv is the environment without any server or model setting.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTSERVER_") && !strings.HasPrefix(kv, "OPENAI_") {
			out = append(out, kv)
		}
	}
	return out
}

func TestHelpAndVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	help := runBinary(t, bin, nil, "--help")
	if help.code != 0 {
		t.Fatalf("--help exited %d", help.code)
	}
	first, _, _ := strings.Cut(help.stdout, "\n")
	if !strings.HasPrefix(first, "agentserver serves ") {
		t.Fatalf("--help starts with %q, want one line saying what the program is", first)
	}
	want := []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "--version", "--help"}
	for _, name := range []string{"addr", "data-dir", "config", "api-key", "n-jobs", "log-level", "enable-shell", "max-subagents", "shutdown-timeout", "stream-retention"} {
		want = append(want, "--"+name)
	}
	for _, env := range []string{config.EnvAddr, config.EnvDataDir, config.EnvConfig, config.EnvAPIKey, config.EnvJobs, config.EnvLogLevel, config.EnvShell, config.EnvMaxSub, config.EnvShutdownTimeout, config.EnvStreamRetention} {
		want = append(want, "env "+env)
	}
	for _, w := range want {
		if !strings.Contains(help.stdout, w) {
			t.Errorf("--help does not mention %q", w)
		}
	}
	if !strings.Contains(help.stdout, "with a unit") {
		t.Error("--help does not say that durations need a unit")
	}

	version := runBinary(t, bin, nil, "--version")
	if version.code != 0 || !strings.HasPrefix(version.stdout, "agentserver ") || !strings.Contains(version.stdout, "commit ") {
		t.Fatalf("--version: exit %d, %q", version.code, version.stdout)
	}
}

func TestVersionFromLinkerFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := filepath.Join(t.TempDir(), "server")
	ldflags := "-X agentserver/internal/version.Version=v9.8.7 -X agentserver/internal/version.Commit=0123456789abcdef"
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	r := runBinary(t, bin, nil, "--version")
	if strings.TrimSpace(r.stdout) == "" || !strings.HasPrefix(r.stdout, "agentserver v9.8.7 (commit 0123456789abcdef;") {
		t.Fatalf("--version = %q", r.stdout)
	}
}

func TestBadCommandLines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown flag", nil, []string{"--bogus"}, "unknown flag --bogus"},
		{"duration without unit", nil, []string{"--shutdown-timeout", "10"}, "want a duration with a unit"},
		{"bad env duration", []string{config.EnvStreamRetention + "=5"}, nil, config.EnvStreamRetention + `="5": want a duration with a unit`},
		{"bad env number", []string{config.EnvJobs + "=many"}, nil, config.EnvJobs + `="many": want a whole number`},
		{"stray argument", nil, []string{"serve"}, "unexpected arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runBinary(t, bin, c.env, c.args...)
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if r.code != 2 || len(lines) != 2 || !strings.Contains(lines[0], c.want) || !strings.Contains(lines[1], "--help") {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2, one error line with %q and a hint", r.code, r.stderr, c.want)
			}
		})
	}
}

// writeGraphs writes a langgraph.json (and files next to it) and returns
// its path.
func writeGraphs(t *testing.T, graphs string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "langgraph.json")
	if err := os.WriteFile(path, []byte(graphs), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStartupErrorsNameTheirCause checks the one-line errors of a server
// that cannot start: each names the file or address at fault, and the
// process exits at once with status 1.
func TestStartupErrorsNameTheirCause(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
	bin := buildServer(t)
	echo := writeGraphs(t, `{"graphs": {"echo": "builtin:echo"}}`, nil)
	start := func(t *testing.T, dataDir, graphs string) result {
		return runBinary(t, bin, nil, "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--config", graphs)
	}
	expect := func(t *testing.T, r result, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(r.stderr, p) {
				t.Errorf("stderr does not contain %q:\n%s", p, r.stderr)
			}
		}
		if r.code != 1 {
			t.Errorf("exit %d, want 1", r.code)
		}
	}

	t.Run("port in use", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		dataDir := filepath.Join(t.TempDir(), "data")
		r := runBinary(t, bin, nil, "--addr", ln.Addr().String(), "--data-dir", dataDir, "--config", echo)
		expect(t, r, "listen on "+ln.Addr().String()+": the address is already in use")
		if n := strings.Count(r.stderr, "listen"); n != 1 {
			t.Errorf("%q says listen %d times", r.stderr, n)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the data dir was created before the port was checked (stat: %v)", err)
		}
	})

	t.Run("data dir in use", func(t *testing.T) {
		if pgtest.Enabled() {
			t.Skip("the data directory's lock is bbolt's; storage's TestPostgresOneServerPerSchema covers PostgreSQL's")
		}
		dataDir := t.TempDir()
		p := startProcess(t, bin, dataDir)
		defer p.cmd.Process.Kill()
		r := start(t, dataDir, echo)
		expect(t, r, "database is in use by another process", filepath.Join(dataDir, "agentserver.db"))
		if r.took > 3*time.Second {
			t.Errorf("took %v to report the lock", r.took)
		}
	})

	t.Run("corrupt database", func(t *testing.T) {
		dataDir := t.TempDir()
		path := filepath.Join(dataDir, "agentserver.db")
		if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 2000), 0o600); err != nil {
			t.Fatal(err)
		}
		expect(t, start(t, dataDir, echo), "open database "+path+": ")
	})

	// Python graphs are refused in one line that points at the worker
	// protocol; a JavaScript project without its packages installed gets a
	// heading and one line per graph saying what to do.
	for _, c := range []struct {
		lang, src string
		lines     int
		want      []string
	}{
		{"Python", "./agent.py:graph", 1, []string{`"./agent.py:graph" points to Python graph code`, "Python graphs are not served yet", "docs/js-graphs.md#worker-protocol"}},
		{"JavaScript", "./src/agent.ts:graph", 2, []string{"cannot serve the JavaScript graphs", `graph "agent"`, "@langchain/langgraph is not installed", "run npm install"}},
	} {
		t.Run(c.lang+" graph code", func(t *testing.T) {
			graphs := writeGraphs(t, `{"graphs": {"agent": "`+c.src+`"}}`, nil)
			r := start(t, t.TempDir(), graphs)
			expect(t, r, c.want...)
			if n := strings.Count(strings.TrimSpace(r.stderr), "\n") + 1; n != c.lines {
				t.Errorf("want %d lines, got:\n%s", c.lines, r.stderr)
			}
		})
	}

	// A failure after the port is bound (here: recovering a record no
	// build writes) must end the process with the error, not hang in
	// Shutdown.
	t.Run("failure after the port is bound", func(t *testing.T) {
		dataDir := t.TempDir()
		db, err := bolt.Open(filepath.Join(dataDir, "agentserver.db"), 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("subagents"))
			if err != nil {
				return err
			}
			return b.Put([]byte("broken"), []byte("not a record"))
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		expect(t, start(t, dataDir, echo), "recover subagents:")
	})
}
