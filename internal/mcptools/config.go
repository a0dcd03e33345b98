package mcptools

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"time"
)

// Transports of an MCP server.
const (
	TransportStdio          = "stdio"
	TransportStreamableHTTP = "streamable_http"
	TransportSSE            = "sse"
)

// DefaultTimeout bounds one tool call (and opening a session) when the
// server's configuration sets none.
const DefaultTimeout = 60 * time.Second

// ServerConfig is one entry of an agent spec's mcp_servers.
type ServerConfig struct {
	// Name prefixes the server's tool names; unique within a spec.
	Name string `json:"name"`
	// Transport is stdio, streamable_http or sse; empty means stdio when
	// a command is given and streamable_http when a url is.
	Transport string `json:"transport,omitempty"`
	// Command, Args and Env start a stdio server (Env adds to the
	// server's own environment).
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	// URL and Headers reach an HTTP server (streamable HTTP or SSE).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// TimeoutSeconds bounds each tool call (default 60).
	TimeoutSeconds float64 `json:"timeout_seconds,omitempty"`
	// Tools, when set, offers only the named remote tools.
	Tools []string `json:"tools,omitempty"`
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$`)

// Kind is the configuration's transport, defaults applied.
func (c ServerConfig) Kind() string {
	switch {
	case c.Transport != "":
		return c.Transport
	case c.Command != "":
		return TransportStdio
	}
	return TransportStreamableHTTP
}

// Timeout is the bound of one tool call.
func (c ServerConfig) Timeout() time.Duration {
	if c.TimeoutSeconds > 0 {
		return time.Duration(c.TimeoutSeconds * float64(time.Second))
	}
	return DefaultTimeout
}

// Validate checks one server entry; the error names the offending field.
func (c ServerConfig) Validate() error {
	var errs []error
	bad := func(field, reason string) { errs = append(errs, fmt.Errorf("%s: %s", field, reason)) }
	if !serverName.MatchString(c.Name) {
		bad("name", "want 1-32 letters, digits, '_' or '-', starting with a letter or digit")
	}
	switch c.Kind() {
	case TransportStdio:
		if c.Command == "" {
			bad("command", "required for a stdio server")
		}
		if c.URL != "" {
			bad("url", "a stdio server has no url")
		}
	case TransportStreamableHTTP, TransportSSE:
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url", "want http(s)://host[:port][/path]")
		}
		if c.Command != "" {
			bad("command", "an HTTP server has no command")
		}
	default:
		bad("transport", fmt.Sprintf("unknown transport %q (want stdio, streamable_http or sse)", c.Transport))
	}
	if c.TimeoutSeconds < 0 {
		bad("timeout_seconds", "must not be negative")
	}
	return errors.Join(errs...)
}

// ValidateAll checks a list of servers: each entry, and unique names.
func ValidateAll(servers []ServerConfig) error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range servers {
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("mcp_servers[%d]: %w", i, err))
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("mcp_servers[%d]: name %q is listed twice", i, s.Name))
		}
		seen[s.Name] = true
	}
	return errors.Join(errs...)
}
