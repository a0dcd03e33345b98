// Package config turns flags and environment variables into the server's
// configuration. A flag wins over its environment variable, which wins over
// the default; the result is validated once, at start.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Config is everything the server needs to start.
type Config struct {
	// Addr is the listen address (host:port).
	Addr string
	// DataDir holds the embedded database file and agent workspaces.
	DataDir string
	// DatabaseURL, when set, selects PostgreSQL (a postgres:// URL) as the
	// database instead of the embedded file in DataDir.
	DatabaseURL string
	// GraphsFile is the path of langgraph.json.
	GraphsFile string
	// APIKey, when set, is required as x-api-key on every route but /ok.
	APIKey string
	// Jobs is the number of run workers.
	Jobs int
	// LogLevel is debug, info, warn or error.
	LogLevel string
	// LogFormat is text or json; empty picks text on a terminal and json
	// otherwise.
	LogFormat string
	// ShutdownTimeout bounds the graceful shutdown.
	ShutdownTimeout time.Duration
	// EnableShell lets agent specs that list the bash tool use it.
	EnableShell bool
	// MaxSubagents bounds the task-tool subagents running at once in the
	// process; more wait in a FIFO queue.
	MaxSubagents int
	// StreamRetention is how long a finished run's stream events (and, for
	// resumable streams, their stored copy) stay available to joins.
	StreamRetention time.Duration
	// RunTimeout ends a run that has run this long with status timeout
	// (0: no limit). The default is LangGraph Platform's, one hour.
	RunTimeout time.Duration
	// RunStopGrace is how long a cancelled or timed-out run may take to
	// stop before it is ended without waiting and its thread moves on.
	RunStopGrace time.Duration

	// Limits on hostile or runaway input.

	// MaxBodyBytes bounds a request body; larger ones get 413.
	MaxBodyBytes int
	// WorkspaceQuota bounds the bytes of files the file tools may keep in
	// one thread's workspace.
	WorkspaceQuota int
	// CronSeconds accepts cron schedules with a leading seconds field
	// (six fields); five-field schedules are always accepted.
	CronSeconds bool
	// MaxCrons bounds the crons that may exist at once (0: no bound);
	// creating one more answers 429.
	MaxCrons int
	// MetricsAddr, when set, serves GET /metrics on a listener of its own
	// without the API key; otherwise /metrics is on Addr behind the key.
	MetricsAddr string
	// RunLease is how long a replica's hold on a running run lasts without
	// renewal before another replica takes the run over (PostgreSQL).
	RunLease time.Duration
	// AdvertiseURL is where the other replicas reach this one's API
	// (PostgreSQL); empty: http:// and the listen address.
	AdvertiseURL string

	// JSWorkers is the number of Node graph worker processes started when
	// langgraph.json has JavaScript graphs.
	JSWorkers int
	// JSWorkerConcurrency bounds the runs one graph worker runs at once.
	JSWorkerConcurrency int
	// JSWarmUpRuns is how many in-memory runs of an internal graph a
	// graph worker makes at start, before it takes runs (0: none).
	JSWarmUpRuns int
	// JSNodeArgs are extra node options given to every graph worker
	// before its script, separated by spaces (--cpu-prof,
	// --max-old-space-size=4096): those NODE_OPTIONS refuses too.
	JSNodeArgs string
	// Watch reloads the JavaScript graphs when a file of their project
	// changes (new graph workers replace the old ones), as langgraphjs dev
	// does.
	Watch bool
}

// Default returns the configuration used when nothing is set.
func Default() Config {
	return Config{
		Addr:            "127.0.0.1:2024",
		DataDir:         "./data",
		GraphsFile:      "./langgraph.json",
		Jobs:            DefaultJobs(),
		LogLevel:        "info",
		ShutdownTimeout: 10 * time.Second,
		StreamRetention: 10 * time.Minute,
		MaxSubagents:    32,
		RunTimeout:      time.Hour,
		RunStopGrace:    10 * time.Second,
		RunLease:        15 * time.Second,
		MaxBodyBytes:    DefaultMaxBodyBytes,
		WorkspaceQuota:  DefaultWorkspaceQuota,
		MaxCrons:        1000,

		JSWorkers:           1,
		JSWarmUpRuns:        DefaultJSWarmUpRuns,
		JSWorkerConcurrency: 64,
	}
}

// DefaultJobs is the default worker count: enough to overlap runs that wait
// on models and tools, scaled with the machine. A worker is a goroutine, so
// the bound is about concurrent model calls and memory, not cores; below
// the number of clients running at once, runs queue and each pays one more
// commit to start.
func DefaultJobs() int {
	return max(64, 16*runtime.NumCPU())
}

// Defaults of the input limits.
const (
	// DefaultMaxBodyBytes is the default request body limit (10 MiB).
	DefaultMaxBodyBytes = 10 << 20
	// DefaultWorkspaceQuota is the default workspace quota (100 MiB).
	DefaultWorkspaceQuota = 100 << 20
)

// DefaultJSWarmUpRuns is the default number of a graph worker's warm-up
// runs: a fresh worker's first runs of a one-node graph took 11–14 ms,
// those after 50 runs 6.5–9.4 ms (docs/benchmarks.md).
const DefaultJSWarmUpRuns = 50

// env names, each the fallback of the flag of the same meaning.
const (
	EnvAddr            = "AGENTSERVER_ADDR"
	EnvDataDir         = "AGENTSERVER_DATA_DIR"
	EnvDatabaseURL     = "AGENTSERVER_DATABASE_URL"
	EnvConfig          = "AGENTSERVER_CONFIG"
	EnvAPIKey          = "AGENTSERVER_API_KEY"
	EnvJobs            = "AGENTSERVER_N_JOBS"
	EnvLogLevel        = "AGENTSERVER_LOG_LEVEL"
	EnvLogFormat       = "AGENTSERVER_LOG_FORMAT"
	EnvShell           = "AGENTSERVER_ENABLE_SHELL"
	EnvMaxSub          = "AGENTSERVER_MAX_SUBAGENTS"
	EnvShutdownTimeout = "AGENTSERVER_SHUTDOWN_TIMEOUT"
	EnvStreamRetention = "AGENTSERVER_STREAM_RETENTION"
	EnvRunTimeout      = "AGENTSERVER_RUN_TIMEOUT"
	EnvRunStopGrace    = "AGENTSERVER_RUN_STOP_GRACE"
	EnvCronSeconds     = "AGENTSERVER_CRON_SECONDS"
	EnvMaxCrons        = "AGENTSERVER_MAX_CRONS"
	EnvMetricsAddr     = "AGENTSERVER_METRICS_ADDR"
	EnvRunLease        = "AGENTSERVER_RUN_LEASE"
	EnvAdvertiseURL    = "AGENTSERVER_ADVERTISE_URL"
	EnvJSWorkers       = "AGENTSERVER_JS_WORKERS"
	EnvJSConcurrency   = "AGENTSERVER_JS_WORKER_CONCURRENCY"
	EnvJSNodeArgs      = "AGENTSERVER_JS_NODE_ARGS"
	EnvJSWarmUpRuns    = "AGENTSERVER_JS_WARM_UP_RUNS"
	EnvWatch           = "AGENTSERVER_WATCH"
	// EnvBGJobTimeout is LangGraph Platform's name for the run timeout, in
	// seconds; AGENTSERVER_RUN_TIMEOUT wins over it.
	EnvBGJobTimeout = "BG_JOB_TIMEOUT_SECS"
	EnvMaxBody      = "AGENTSERVER_MAX_BODY_SIZE"
	EnvQuota        = "AGENTSERVER_WORKSPACE_QUOTA"
)

// ErrVersion is returned by Parse for --version: print the version, exit 0.
var ErrVersion = errors.New("version requested")

// ErrUsage marks command-line and environment errors (a bad flag, a bad
// value): the caller prints the error with a hint to --help.
var ErrUsage = errors.New("usage")

// usageError is an error of the command line or environment; its message is
// the cause's alone.
type usageError struct{ error }

func (e usageError) Unwrap() error      { return e.error }
func (usageError) Is(target error) bool { return target == ErrUsage }

// option is one flag with its environment fallback, in help order.
type option struct {
	name, env, arg, usage string
	value                 func(c *Config) flag.Value
}

// options lists every flag. Add new ones here: help, env fallback and
// parsing follow from this table.
var options = []option{
	{"addr", EnvAddr, "host:port", "listen address", func(c *Config) flag.Value { return (*stringValue)(&c.Addr) }},
	{"data-dir", EnvDataDir, "dir", "directory of the database file", func(c *Config) flag.Value { return (*stringValue)(&c.DataDir) }},
	{"database-url", EnvDatabaseURL, "url", "keep the database in PostgreSQL (postgres://user:password@host:5432/db) instead of the file in data-dir", func(c *Config) flag.Value { return (*stringValue)(&c.DatabaseURL) }},
	{"config", EnvConfig, "file", "path of langgraph.json", func(c *Config) flag.Value { return (*stringValue)(&c.GraphsFile) }},
	{"api-key", EnvAPIKey, "key", "require this x-api-key on every route but /ok, /openapi.json, /docs and the console's files", func(c *Config) flag.Value { return (*stringValue)(&c.APIKey) }},
	{"n-jobs", EnvJobs, "n", "number of run workers", func(c *Config) flag.Value { return (*intValue)(&c.Jobs) }},
	{"log-level", EnvLogLevel, "level", "debug, info, warn or error", func(c *Config) flag.Value { return (*stringValue)(&c.LogLevel) }},
	{"log-format", EnvLogFormat, "format", "text or json (default: text on a terminal, json otherwise)", func(c *Config) flag.Value { return (*stringValue)(&c.LogFormat) }},
	{"enable-shell", EnvShell, "", "let agents whose spec lists bash run shell commands in their workspace", func(c *Config) flag.Value { return (*boolValue)(&c.EnableShell) }},
	{"max-subagents", EnvMaxSub, "n", "task-tool subagents running at once; more wait in line", func(c *Config) flag.Value { return (*intValue)(&c.MaxSubagents) }},
	{"shutdown-timeout", EnvShutdownTimeout, "duration", "how long a graceful shutdown may take (with a unit: 10s, 1m)", func(c *Config) flag.Value { return (*durationValue)(&c.ShutdownTimeout) }},
	{"stream-retention", EnvStreamRetention, "duration", "how long a finished run's stream events stay joinable (with a unit: 30s, 10m, 1h)", func(c *Config) flag.Value { return (*durationValue)(&c.StreamRetention) }},
	{"run-timeout", EnvRunTimeout, "duration", "end runs that take longer with status timeout; 0: no limit (a bare number is seconds; also read from " + EnvBGJobTimeout + ")", func(c *Config) flag.Value { return (*secondsValue)(&c.RunTimeout) }},
	{"run-stop-grace", EnvRunStopGrace, "duration", "how long a cancelled or timed-out run may take to stop before its thread moves on (with a unit: 10s)", func(c *Config) flag.Value { return (*durationValue)(&c.RunStopGrace) }},
	{"run-lease", EnvRunLease, "duration", "with --database-url: how long a replica's hold on a running run lasts unrenewed before another replica takes it over (with a unit: 15s)", func(c *Config) flag.Value { return (*durationValue)(&c.RunLease) }},
	{"advertise-url", EnvAdvertiseURL, "url", "with --database-url: the URL other replicas reach this one at, to stream its runs (default: http:// and --addr, with this host's name for an unspecified host)", func(c *Config) flag.Value { return (*stringValue)(&c.AdvertiseURL) }},
	{"cron-seconds", EnvCronSeconds, "", "accept cron schedules with a leading seconds field", func(c *Config) flag.Value { return (*boolValue)(&c.CronSeconds) }},
	{"max-crons", EnvMaxCrons, "n", "crons that may exist at once; 0: no bound", func(c *Config) flag.Value { return (*intValue)(&c.MaxCrons) }},
	{"metrics-addr", EnvMetricsAddr, "host:port", "serve GET /metrics (Prometheus) on this address without the API key; unset: on --addr, behind the key", func(c *Config) flag.Value { return (*stringValue)(&c.MetricsAddr) }},
	{"max-body-size", EnvMaxBody, "bytes", "largest request body in bytes; larger ones get 413", func(c *Config) flag.Value { return (*intValue)(&c.MaxBodyBytes) }},
	{"js-workers", EnvJSWorkers, "n", "Node graph worker processes for langgraph.json's JavaScript graphs", func(c *Config) flag.Value { return (*intValue)(&c.JSWorkers) }},
	{"js-worker-concurrency", EnvJSConcurrency, "n", "runs one Node graph worker runs at once; more wait for a free one", func(c *Config) flag.Value { return (*intValue)(&c.JSWorkerConcurrency) }},
	{"js-warm-up-runs", EnvJSWarmUpRuns, "n", "in-memory runs of an internal graph each Node graph worker makes at start (at most 1 s), so that its first real runs are as fast as later ones; 0: none", func(c *Config) flag.Value { return (*intValue)(&c.JSWarmUpRuns) }},
	{"js-node-args", EnvJSNodeArgs, "options", "extra node options for every graph worker, separated by spaces (--cpu-prof --cpu-prof-dir=prof; NODE_OPTIONS is passed on too)", func(c *Config) flag.Value { return (*stringValue)(&c.JSNodeArgs) }},
	{"watch", EnvWatch, "", "reload the JavaScript graphs when a file of their project changes (new graph workers replace the old ones once their runs end)", func(c *Config) flag.Value { return (*boolValue)(&c.Watch) }},
	{"workspace-quota", EnvQuota, "bytes", "bytes of files the file tools may keep in one thread's workspace", func(c *Config) flag.Value { return (*intValue)(&c.WorkspaceQuota) }},
}

// envAliases are further environment variables of a flag, read when the
// flag and its own variable are unset.
var envAliases = map[string]string{"run-timeout": EnvBGJobTimeout}

// Parse reads args (without the program name) with getenv as the fallback
// of each flag. It returns flag.ErrHelp for -h/--help, ErrVersion for
// --version, and an error wrapping ErrUsage for a bad flag or value.
func Parse(args []string, getenv func(string) string) (Config, error) {
	c := Default()
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, o := range options {
		fs.Var(o.value(&c), o.name, o.usage)
	}
	showVersion := fs.Bool("version", false, "print the version and commit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c, err
		}
		return c, usageError{doubleDash(err)}
	}
	if *showVersion {
		return c, ErrVersion
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Errorf("unexpected arguments: %q (flags start with --)", fs.Args())}
	}
	if err := applyEnv(fs, getenv); err != nil {
		return c, err
	}
	c.Addr = withDefaultHost(c.Addr)
	return c, c.Validate()
}

// withDefaultHost reads a bare port ("8080") as that port on the default
// host, 127.0.0.1; anything else is left for Validate.
func withDefaultHost(addr string) string {
	if port, err := strconv.ParseUint(addr, 10, 16); err == nil {
		return net.JoinHostPort("127.0.0.1", strconv.FormatUint(port, 10))
	}
	return addr
}

// doubleDash rewrites the flag package's messages, which name flags with
// one dash, in the two-dash form --help shows.
func doubleDash(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s", strings.TrimPrefix(name, "-"))
	}
	if before, after, ok := strings.Cut(msg, " for flag -"); ok {
		return errors.New(before + " for flag --" + after)
	}
	return err
}

// applyEnv sets every flag the command line left out from its environment
// variable, when that is set.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, o := range options {
		env := o.env
		v := getenv(env)
		if alias, ok := envAliases[o.name]; ok && v == "" {
			env, v = alias, getenv(alias)
		}
		if given[o.name] || v == "" {
			continue
		}
		if err := fs.Set(o.name, v); err != nil {
			return usageError{fmt.Errorf("%s=%q: %w", env, v, err)}
		}
	}
	return nil
}

// Usage writes the help text: what the program is, its flags with their
// environment variables and defaults, and the model's environment.
func Usage(w io.Writer) {
	d := Default()
	defaults := map[string]string{}
	for _, o := range options {
		defaults[o.name] = o.value(&d).String()
	}
	fmt.Fprintln(w, "agentserver serves agents and graphs over the LangGraph Platform HTTP API and the Agent Protocol.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: server [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Flags (a flag wins over its environment variable, which wins over the default):")
	for _, o := range options {
		name := "--" + o.name
		if o.arg != "" {
			name += " " + o.arg
		}
		def := ""
		if v := defaults[o.name]; v != "" && v != "false" {
			def = ", default " + v
		}
		fmt.Fprintf(w, "  %-28s %s (env %s%s)\n", name, o.usage, o.env, def)
	}
	fmt.Fprintf(w, "  %-28s %s\n", "--version", "print the version and commit, then exit")
	fmt.Fprintf(w, "  %-28s %s\n", "-h, --help", "print this help, then exit")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Model (read by the agents; with neither set they answer with an offline model that says so):")
	fmt.Fprintf(w, "  %-28s %s\n", "OPENAI_API_KEY", "key of the OpenAI-compatible provider")
	fmt.Fprintf(w, "  %-28s %s\n", "OPENAI_BASE_URL", "base URL of any OpenAI-compatible server, e.g. http://127.0.0.1:8000/v1")
	fmt.Fprintf(w, "  %-28s %s\n", "LANGGRAPH_API_KEY", "x-api-key sent to remote async-subagent servers")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Without flags it serves ./langgraph.json on 127.0.0.1:2024 with its data in ./data.")
	fmt.Fprintln(w, "Docs: docs/configuration.md; try the supervisor without a key: docs/supervisor.md.")
}

// stringValue, intValue, boolValue and durationValue are flag values with
// messages that say what is wanted.
type (
	stringValue   string
	intValue      int
	boolValue     bool
	durationValue time.Duration
)

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New("want a whole number")
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration with a unit, such as 30s, 10m or 1h")
	}
	*v = durationValue(d)
	return nil
}

// secondsValue is a duration that may also be written as a number of
// seconds (LangGraph Platform's BG_JOB_TIMEOUT_SECS).
type secondsValue time.Duration

func (v *secondsValue) Set(s string) error {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if secs < 0 {
			return errors.New("must not be negative")
		}
		*v = secondsValue(secs * float64(time.Second))
		return nil
	}
	return (*durationValue)(v).Set(s)
}
func (v *secondsValue) String() string { return (*durationValue)(v).String() }

// String writes whole minutes and hours without zero parts ("10m", not
// "10m0s").
func (v *durationValue) String() string {
	s := time.Duration(*v).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Validate checks the configuration once, at start.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("addr %q: %w", c.Addr, err))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir must not be empty"))
	}
	if err := validateDatabaseURL(c.DatabaseURL); err != nil {
		errs = append(errs, err)
	}
	if c.GraphsFile == "" {
		errs = append(errs, errors.New("config must not be empty"))
	}
	if c.Jobs < 1 {
		errs = append(errs, fmt.Errorf("n-jobs must be at least 1, got %d", c.Jobs))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level %q: want debug, info, warn or error", c.LogLevel))
	}
	switch c.LogFormat {
	case "", "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log-format %q: want text or json", c.LogFormat))
	}
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("shutdown-timeout must be positive"))
	}
	if c.JSWarmUpRuns < 0 {
		errs = append(errs, fmt.Errorf("js-warm-up-runs must not be negative, got %d", c.JSWarmUpRuns))
	}
	if c.JSWorkers < 1 {
		errs = append(errs, fmt.Errorf("js-workers must be at least 1, got %d", c.JSWorkers))
	}
	if c.JSWorkerConcurrency < 1 {
		errs = append(errs, fmt.Errorf("js-worker-concurrency must be at least 1, got %d", c.JSWorkerConcurrency))
	}
	if c.MaxSubagents < 1 {
		errs = append(errs, errors.New("max-subagents must be at least 1"))
	}
	if c.StreamRetention <= 0 {
		errs = append(errs, errors.New("stream-retention must be positive"))
	}
	if c.RunTimeout < 0 {
		errs = append(errs, errors.New("run-timeout must not be negative"))
	}
	if c.RunStopGrace <= 0 {
		errs = append(errs, errors.New("run-stop-grace must be positive"))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, fmt.Errorf("max-body-size must be at least 1 byte, got %d", c.MaxBodyBytes))
	}
	if c.WorkspaceQuota < 1 {
		errs = append(errs, fmt.Errorf("workspace-quota must be at least 1 byte, got %d", c.WorkspaceQuota))
	}
	if c.RunLease < time.Second {
		errs = append(errs, errors.New("run-lease must be at least 1s"))
	}
	if c.AdvertiseURL != "" {
		if u, err := url.Parse(c.AdvertiseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("advertise-url %q: want an http:// or https:// URL", c.AdvertiseURL))
		}
	}
	if c.MaxCrons < 0 {
		errs = append(errs, errors.New("max-crons must not be negative"))
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			errs = append(errs, fmt.Errorf("metrics-addr %q: %w", c.MetricsAddr, err))
		}
	}
	return errors.Join(errs...)
}

// validateDatabaseURL accepts an empty URL (the embedded database) or a
// postgres:// or postgresql:// URL. The message does not repeat the URL,
// which may hold a password.
func validateDatabaseURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return errors.New("database-url: want a postgres:// or postgresql:// URL")
	}
	return nil
}
