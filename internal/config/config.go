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
	"runtime"
	"strconv"
	"time"
)

// Config is everything the server needs to start.
type Config struct {
	// Addr is the listen address (host:port).
	Addr string
	// DataDir holds the database file.
	DataDir string
	// GraphsFile is the path of langgraph.json.
	GraphsFile string
	// APIKey, when set, is required as x-api-key on every route but /ok.
	APIKey string
	// Jobs is the number of run workers.
	Jobs int
	// LogLevel is debug, info, warn or error.
	LogLevel string
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

	// Limits on hostile or runaway input.

	// MaxBodyBytes bounds a request body; larger ones get 413.
	MaxBodyBytes int
	// WorkspaceQuota bounds the bytes of files the file tools may keep in
	// one thread's workspace.
	WorkspaceQuota int
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
		MaxBodyBytes:    DefaultMaxBodyBytes,
		WorkspaceQuota:  DefaultWorkspaceQuota,
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

// env names, each the fallback of the flag of the same meaning.
const (
	EnvAddr     = "AGENTSERVER_ADDR"
	EnvDataDir  = "AGENTSERVER_DATA_DIR"
	EnvConfig   = "AGENTSERVER_CONFIG"
	EnvAPIKey   = "AGENTSERVER_API_KEY"
	EnvJobs     = "AGENTSERVER_N_JOBS"
	EnvLogLevel = "AGENTSERVER_LOG_LEVEL"
	EnvShell    = "AGENTSERVER_ENABLE_SHELL"
	EnvMaxSub   = "AGENTSERVER_MAX_SUBAGENTS"
	EnvMaxBody  = "AGENTSERVER_MAX_BODY_SIZE"
	EnvQuota    = "AGENTSERVER_WORKSPACE_QUOTA"
)

// Parse reads args (without the program name) with getenv as the fallback.
func Parse(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	c := Default()
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	str := func(p *string, name, env, usage string) {
		if v := getenv(env); v != "" {
			*p = v
		}
		fs.StringVar(p, name, *p, fmt.Sprintf("%s (env %s)", usage, env))
	}
	str(&c.Addr, "addr", EnvAddr, "listen address")
	str(&c.DataDir, "data-dir", EnvDataDir, "directory of the database file")
	str(&c.GraphsFile, "config", EnvConfig, "path of langgraph.json")
	str(&c.APIKey, "api-key", EnvAPIKey, "require this x-api-key on every route but /ok")
	str(&c.LogLevel, "log-level", EnvLogLevel, "debug, info, warn or error")
	if v := getenv(EnvJobs); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: not a number", EnvJobs, v)
		}
		c.Jobs = n
	}
	fs.IntVar(&c.Jobs, "n-jobs", c.Jobs, fmt.Sprintf("number of run workers (env %s)", EnvJobs))
	if v := getenv(EnvShell); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: not a boolean", EnvShell, v)
		}
		c.EnableShell = b
	}
	fs.BoolVar(&c.EnableShell, "enable-shell", c.EnableShell, fmt.Sprintf("let agents whose spec lists bash run shell commands in their workspace (env %s)", EnvShell))
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "how long a graceful shutdown may take")
	if v := getenv(EnvMaxSub); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("%s=%q: not a number", EnvMaxSub, v)
		}
		c.MaxSubagents = n
	}
	fs.IntVar(&c.MaxSubagents, "max-subagents", c.MaxSubagents, fmt.Sprintf("task-tool subagents running at once; more wait in line (env %s)", EnvMaxSub))
	fs.DurationVar(&c.StreamRetention, "stream-retention", c.StreamRetention, "how long a finished run's stream events stay joinable")
	if err := limitFlags(fs, &c, getenv); err != nil {
		return c, err
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return c, c.Validate()
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
	if c.ShutdownTimeout <= 0 {
		errs = append(errs, errors.New("shutdown-timeout must be positive"))
	}
	if c.MaxSubagents < 1 {
		errs = append(errs, errors.New("max-subagents must be at least 1"))
	}
	if c.StreamRetention <= 0 {
		errs = append(errs, errors.New("stream-retention must be positive"))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, fmt.Errorf("max-body-size must be at least 1 byte, got %d", c.MaxBodyBytes))
	}
	if c.WorkspaceQuota < 1 {
		errs = append(errs, fmt.Errorf("workspace-quota must be at least 1 byte, got %d", c.WorkspaceQuota))
	}
	return errors.Join(errs...)
}

// limitFlags declares the flags of the input limits.
func limitFlags(fs *flag.FlagSet, c *Config, getenv func(string) string) error {
	bytesFlag := func(p *int, name, env, usage string) error {
		if v := getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s=%q: not a number", env, v)
			}
			*p = n
		}
		fs.IntVar(p, name, *p, fmt.Sprintf("%s (env %s)", usage, env))
		return nil
	}
	return errors.Join(
		bytesFlag(&c.MaxBodyBytes, "max-body-size", EnvMaxBody, "largest request body in bytes; larger ones get 413"),
		bytesFlag(&c.WorkspaceQuota, "workspace-quota", EnvQuota, "bytes of files the file tools may keep in one thread's workspace"),
	)
}
