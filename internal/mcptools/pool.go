package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"agentserver/internal/version"
)

// ErrClosed reports a call on a Pool that was closed (the server is
// shutting down).
var ErrClosed = errors.New("mcp client pool is closed")

// Pool owns the MCP client sessions of a server process: one per distinct
// server configuration, shared by the agents that list it.
type Pool struct {
	log    *slog.Logger
	client *mcp.Client

	mu      sync.Mutex
	closed  bool
	servers map[string]*Server // by configuration key
	// uses are the servers each graph's current spec lists.
	uses map[string][]*Server
}

// NewPool returns an empty pool; log may be nil.
func NewPool(log *slog.Logger) *Pool {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	impl := &mcp.Implementation{Name: "agentserver", Version: version.Get().Version}
	return &Pool{log: log, client: mcp.NewClient(impl, nil), servers: map[string]*Server{}, uses: map[string][]*Server{}}
}

// Server returns the pool's handle of a server configuration; equal
// configurations share one handle and so one session.
func (p *Pool) Server(cfg ServerConfig) *Server {
	raw, _ := json.Marshal(cfg)
	key := string(raw)
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.servers[key]; ok {
		return s
	}
	s := &Server{cfg: cfg, pool: p}
	p.servers[key] = s
	return s
}

// Use returns the handles of the servers graph's spec lists now (none is
// fine) and records them; the sessions of servers that no graph lists any
// more (a reload removed or changed them) are closed, stopping their
// processes. A closed handle that is still called opens a new session.
func (p *Pool) Use(graph string, cfgs []ServerConfig) []*Server {
	out := make([]*Server, len(cfgs))
	for i, c := range cfgs {
		out[i] = p.Server(c)
	}
	p.mu.Lock()
	prev := p.uses[graph]
	p.uses[graph] = out
	var unused []*Server
	for _, s := range prev {
		if !p.usedLocked(s) {
			unused = append(unused, s)
		}
	}
	p.mu.Unlock()
	for _, s := range unused {
		if err := s.close(); err != nil {
			p.log.Warn("closing an MCP session no spec lists any more", "server", s.cfg.Name, "err", err)
		}
	}
	return out
}

func (p *Pool) usedLocked(s *Server) bool {
	for _, list := range p.uses {
		for _, u := range list {
			if u == s {
				return true
			}
		}
	}
	return false
}

// Close ends every session (stopping stdio processes) and refuses new ones.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	servers := make([]*Server, 0, len(p.servers))
	for _, s := range p.servers {
		servers = append(servers, s)
	}
	p.mu.Unlock()
	// In parallel: a stdio server that ignores its closed stdin is given a
	// grace period before it is terminated.
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() {
			if err := s.close(); err != nil {
				errs[i] = fmt.Errorf("mcp server %q: %w", s.cfg.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *Pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Server is one configured MCP server: its live session (if any) and the
// tools it offered on that session.
type Server struct {
	cfg  ServerConfig
	pool *Pool

	mu      sync.Mutex // guards session, tools and end; held while connecting
	session *mcp.ClientSession
	tools   []*remoteTool
	// end cancels the session's context (after it was closed).
	end context.CancelFunc
}

// Config is the server's configuration.
func (s *Server) Config() ServerConfig { return s.cfg }

// connected returns the live session, opening one when there is none.
func (s *Server) connected(ctx context.Context) (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return s.session, nil
	}
	if s.pool.isClosed() {
		return nil, ErrClosed
	}
	// The session outlives the call that opens it (an SSE transport keeps
	// the connect context for its event stream), so it gets a context of
	// its own, which the caller's context and the timeout end only while
	// connecting.
	life, end := context.WithCancel(context.Background())
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout())
	defer cancel()
	unbind := context.AfterFunc(cctx, end)
	cs, err := s.pool.client.Connect(life, s.transport(), nil)
	if !unbind() || err != nil {
		end()
		if err == nil {
			cs.Close()
			err = context.Cause(cctx)
		}
		return nil, fmt.Errorf("mcp server %q: connect: %w", s.cfg.Name, err)
	}
	s.session, s.tools, s.end = cs, nil, end
	go s.watch(cs)
	return cs, nil
}

// watch forgets a session once it has ended, so the next call opens a new
// one.
func (s *Server) watch(cs *mcp.ClientSession) {
	err := cs.Wait()
	if s.forget(cs) {
		s.pool.log.Warn("an MCP session ended; the next call opens a new one", "server", s.cfg.Name, "err", err)
	}
}

// forget drops cs if it is still the current session; it reports whether
// it was.
func (s *Server) forget(cs *mcp.ClientSession) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != cs {
		return false
	}
	s.end()
	s.session, s.tools, s.end = nil, nil, nil
	return true
}

func (s *Server) close() error {
	s.mu.Lock()
	cs, end := s.session, s.end
	s.session, s.tools, s.end = nil, nil, nil
	s.mu.Unlock()
	if cs == nil {
		return nil
	}
	defer end()
	return cs.Close()
}

// transport builds the SDK transport of the configuration. A stdio
// command is not bound to any request's context: the session owns it.
func (s *Server) transport() mcp.Transport {
	switch s.cfg.Kind() {
	case TransportStdio:
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Env = os.Environ()
		for k, v := range s.cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		return &mcp.CommandTransport{Command: cmd}
	case TransportSSE:
		return &mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}
	}
	return &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient(), DisableStandaloneSSE: true}
}

func (s *Server) httpClient() *http.Client {
	if len(s.cfg.Headers) == 0 {
		return nil
	}
	return &http.Client{Transport: headerTransport{headers: s.cfg.Headers, next: http.DefaultTransport}}
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	headers map[string]string
	next    http.RoundTripper
}

// RoundTrip sends req with the headers set.
func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	return h.next.RoundTrip(req)
}

// withSession runs f on the live session; when the session turns out to be
// dead, it is forgotten and f runs once more on a new one.
func (s *Server) withSession(ctx context.Context, f func(*mcp.ClientSession) error) error {
	for attempt := 0; ; attempt++ {
		cs, err := s.connected(ctx)
		if err != nil {
			return err
		}
		err = f(cs)
		if err == nil || !sessionDead(err) || attempt > 0 || ctx.Err() != nil {
			return err
		}
		s.forget(cs)
		cs.Close()
	}
}

// sessionDead reports an error that means the session's connection is gone
// (the process exited, the stream ended) rather than a failed request.
func sessionDead(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE)
}
