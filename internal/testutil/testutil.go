// Package testutil starts a whole server for tests: real bbolt in a temporary
// directory (or, when AGENTSERVER_TEST_DATABASE_URL names a test database, a
// fresh PostgreSQL schema per data directory) and a real HTTP listener on
// 127.0.0.1, port 0. It also holds the small request helpers (threads, run
// inputs and statuses, agent and supervisor specs, protocol commands) that
// the whole-server tests of every package share, so that each exists once.
//
// A test of package X that internal/server imports must be in package
// X_test: testutil imports internal/server.
package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"agentserver/internal/config"
	"agentserver/internal/server"
	"agentserver/internal/storage"
	"agentserver/internal/testutil/pgtest"
)

// DefaultGraphs is the langgraph.json used when a test does not give one.
const DefaultGraphs = `{"graphs": {"echo": "builtin:echo", "other": "builtin:echo"}}`

// Server is a running test server with a small JSON client.
type Server struct {
	*server.Server
	T      testing.TB
	Client *http.Client
	// Header is sent with every request (e.g. x-api-key).
	Header http.Header
}

// Options tune StartServer.
type Options struct {
	// Configure, when set, adjusts the configuration before the server is
	// built (limits, timeouts).
	Configure func(*config.Config)
	// Server tunes the server beyond its configuration.
	Server server.Options

	Graphs string
	// GraphsFile, when set, is the langgraph.json to serve as it is (a
	// project's own, whose relative paths and node_modules it needs);
	// Graphs and Files are then ignored.
	GraphsFile string
	APIKey     string
	// DataDir reuses a directory (for restart tests); empty means a new one.
	DataDir string
	// NoSync turns off fsync (for fuzzing and benchmarks).
	NoSync bool
	// Jobs is the number of run workers (0: the default).
	Jobs int
	// Files are written next to langgraph.json (agent spec files).
	Files map[string]string
	// Shell enables the bash tool for specs that list it.
	Shell bool
	// MaxSubagents is the task-tool admission limit (0: the default).
	MaxSubagents int
	// Log receives the server's log lines as text; nil discards them. The
	// server writes from many goroutines: use a writer safe for that.
	Log io.Writer
	// RunTimeout and RunStopGrace override the run engine's (0: the
	// defaults).
	RunTimeout, RunStopGrace time.Duration
	// CronClock is the cron scheduler's clock (nil: the wall clock).
	CronClock func() time.Time
	// CronSeconds accepts schedules with a seconds field; MaxCrons bounds
	// the crons (0: the default).
	CronSeconds bool
	MaxCrons    int
	// MetricsAddr serves /metrics on a listener of its own (e.g.
	// "127.0.0.1:0"); empty: on the main listener.
	MetricsAddr string
	// ReplicaOf makes the server a replica sharing the PostgreSQL schema of
	// the server on that data directory (PostgreSQL runs only).
	ReplicaOf string
	// RunLease overrides the replicas' run lease (0: the default).
	RunLease time.Duration
}

// Build makes a server (not yet listening) over a temporary data directory.
func Build(t testing.TB, opts Options) *server.Server {
	t.Helper()
	srv, err := build(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// BuildErr returns the error of building a server with opts (nil when it
// builds; the server is then shut down).
func BuildErr(t testing.TB, opts Options) error {
	t.Helper()
	srv, err := build(t, opts)
	if err == nil {
		srv.Shutdown(context.Background())
	}
	return err
}

func build(t testing.TB, opts Options) (*server.Server, error) {
	t.Helper()
	RegisterTestGraphs()
	dir := opts.DataDir
	if dir == "" {
		dir = t.TempDir()
	}
	confDir := t.TempDir()
	graphsFile := filepath.Join(confDir, "langgraph.json")
	for name, body := range opts.Files {
		if err := os.WriteFile(filepath.Join(confDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	body := opts.Graphs
	if body == "" {
		body = DefaultGraphs
	}
	if err := os.WriteFile(graphsFile, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if opts.GraphsFile != "" {
		graphsFile = opts.GraphsFile
	}
	cfg := config.Default()
	cfg.Addr = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.DatabaseURL = DatabaseURL(t, dir)
	if opts.ReplicaOf != "" {
		cfg.DatabaseURL = DatabaseURL(t, opts.ReplicaOf)
	}
	if opts.RunLease > 0 {
		cfg.RunLease = opts.RunLease
	}
	cfg.GraphsFile = graphsFile
	cfg.APIKey = opts.APIKey
	if opts.Jobs > 0 {
		cfg.Jobs = opts.Jobs
	}
	cfg.EnableShell = opts.Shell
	cfg.MetricsAddr = opts.MetricsAddr
	if opts.RunTimeout > 0 {
		cfg.RunTimeout = opts.RunTimeout
	}
	if opts.RunStopGrace > 0 {
		cfg.RunStopGrace = opts.RunStopGrace
	}
	if opts.MaxSubagents > 0 {
		cfg.MaxSubagents = opts.MaxSubagents
	}
	cfg.CronSeconds = opts.CronSeconds
	if opts.MaxCrons > 0 {
		cfg.MaxCrons = opts.MaxCrons
	}
	if opts.Configure != nil {
		opts.Configure(&cfg)
	}
	out := opts.Log
	if out == nil {
		out = io.Discard
	}
	log := slog.New(slog.NewTextHandler(out, nil))
	sopts := opts.Server
	sopts.NoSync = sopts.NoSync || opts.NoSync
	if opts.CronClock != nil {
		sopts.CronClock = opts.CronClock
	}
	return server.New(cfg, log, sopts)
}

// databases maps a data directory to the PostgreSQL URL of its schema, so
// that a server restarted on the same directory finds its data again.
var databases sync.Map

// DatabaseURL is the PostgreSQL URL a test server on data directory dir
// uses: "" (the embedded database in dir) unless AGENTSERVER_TEST_DATABASE_URL
// is set; then a schema made for dir on first use and dropped when the test
// that made it ends.
func DatabaseURL(t testing.TB, dir string) string {
	t.Helper()
	if !pgtest.Enabled() {
		return ""
	}
	if url, ok := databases.Load(dir); ok {
		return url.(string)
	}
	url := pgtest.FreshSchema(t)
	databases.Store(dir, url)
	t.Cleanup(func() { databases.Delete(dir) })
	return url
}

// OpenDatabase opens the database a test server on data directory dir
// uses (bbolt in dir, or dir's PostgreSQL schema), for a test that writes
// records the HTTP API would refuse before it starts the server.
func OpenDatabase(t testing.TB, dir string) (*storage.DB, error) {
	t.Helper()
	if url := DatabaseURL(t, dir); url != "" {
		return storage.OpenPostgres(url, storage.Options{})
	}
	return storage.Open(dir, storage.Options{})
}

// StartServer starts a server and stops it when the test ends.
func StartServer(t testing.TB, opts Options) *Server {
	t.Helper()
	srv := Build(t, opts)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{Server: srv, T: t, Client: &http.Client{Timeout: 30 * time.Second}, Header: http.Header{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return s
}

// Response is a decoded HTTP response.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
	// JSON is the decoded body (nil when the body is empty).
	JSON any
}

// Object returns the body as a JSON object, failing the test otherwise.
func (r Response) Object(t testing.TB) map[string]any {
	t.Helper()
	m, ok := r.JSON.(map[string]any)
	if !ok {
		t.Fatalf("body is not an object: %s", r.Raw)
	}
	return m
}

// List returns the body as a JSON array, failing the test otherwise.
func (r Response) List(t testing.TB) []any {
	t.Helper()
	l, ok := r.JSON.([]any)
	if !ok {
		t.Fatalf("body is not a list: %s", r.Raw)
	}
	return l
}

// Do sends a request; body may be nil, a string (sent as is) or a value
// encoded as JSON.
func (s *Server) Do(method, path string, body any) Response {
	return s.DoWith(method, path, body, nil)
}

// DoWith is Do with extra headers.
func (s *Server) DoWith(method, path string, body any, header http.Header) Response {
	s.T.Helper()
	resp, raw := s.send(s.newRequest(method, path, body), header)
	out := Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out.JSON); err != nil {
			s.T.Fatalf("%s %s: body is not JSON (%v): %s", method, path, err, raw)
		}
	}
	return out
}

// Try is Do for a goroutine other than the test's own: it never stops the
// test (a t.Fatal there would end only that goroutine, and the test would
// wait forever for its answer). A failed exchange comes back as status 0
// with the error's text in Raw; the request may take up to two minutes.
func (s *Server) Try(method, path string, body any) Response {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	req := s.newRequest(method, path, body).WithContext(ctx)
	client := *s.Client
	client.Timeout = 0
	resp, err := client.Do(req)
	if err != nil {
		return Response{Raw: []byte(err.Error())}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	out := Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if err != nil {
		return Response{Raw: []byte(err.Error())}
	}
	if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &out.JSON) != nil {
		out.Status = 0
	}
	return out
}

// newRequest builds a request; body may be nil, a string (sent as is) or a
// value encoded as JSON.
func (s *Server) newRequest(method, path string, body any) *http.Request {
	s.T.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
		ct = "application/json"
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.T.Fatal(err)
		}
		rd = bytes.NewReader(raw)
		ct = "application/json"
	}
	req, err := http.NewRequest(method, s.URL()+path, rd)
	if err != nil {
		s.T.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for k, v := range s.Header {
		req.Header[k] = v
	}
	return req
}

// Must sends a request and fails the test unless the status is want.
func (s *Server) Must(want int, method, path string, body any) Response {
	s.T.Helper()
	r := s.Do(method, path, body)
	if r.Status != want {
		s.T.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Raw)
	}
	return r
}

// JSONRoundTrip returns v as it reads back from JSON (maps, []any,
// float64), so that values built in Go compare alike with values read from
// the wire or from storage.
func JSONRoundTrip(t testing.TB, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
