package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"agentserver/internal/a2a"
	"agentserver/internal/assistants"
	"agentserver/internal/authn"
	"agentserver/internal/channels"
	"agentserver/internal/config"
	"agentserver/internal/console"
	"agentserver/internal/crons"
	"agentserver/internal/events"
	"agentserver/internal/graphs"
	"agentserver/internal/httpapi"
	"agentserver/internal/jsworker"
	"agentserver/internal/mcpserver"
	"agentserver/internal/metrics"
	"agentserver/internal/protostream"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
	"agentserver/internal/store"
	"agentserver/internal/subagents"
	"agentserver/internal/threads"
	"agentserver/internal/tracing"
)

// Server is one running instance.
type Server struct {
	cfg  config.Config
	log  *slog.Logger
	db   *storage.DB
	http *http.Server
	ln   net.Listener
	// releaseReplica unlocks the data directory of a replica on
	// PostgreSQL (nil on the embedded database, whose file is the lock).
	releaseReplica func()

	// Reducers is the channel reducer registry shared by every service.
	Reducers   *channels.Registry
	Graphs     *graphs.Registry
	Threads    *threads.Service
	Assistants *assistants.Service
	Store      *store.Service
	Runs       *runs.Service
	Crons      *crons.Service
	Broker     *events.Broker
	// Stream serves the thread-centric streaming protocol.
	Stream *protostream.Hub

	agents   *agentRuntime
	reloader *graphs.Reloader
	// jsGraphs runs the JavaScript graphs (nil: langgraph.json has none).
	jsGraphs *jsworker.Pool
	// verifier checks JWT bearer tokens (nil: auth.jwt is not set); its
	// keys are refreshed in the background.
	verifier *authn.Verifier
	// reloadEvery is how often spec files are checked for changes.
	reloadEvery time.Duration

	// metrics serves GET /metrics on cfg.MetricsAddr (nil: not set).
	metrics *metricsListener
	// unregister removes this server's queue from the metrics.
	unregister func()

	shutdownOnce sync.Once
	shutdownErr  error

	bgCancel context.CancelFunc
	// reqCancel ends long-lived requests (streams, waits) at shutdown.
	reqCancel context.CancelFunc
	bg        sync.WaitGroup
	serveErr  chan error
}

// Options tune a server beyond its config; tests and benchmarks use them.
type Options struct {
	// BodyStallTimeout and BodyReadTimeout bound reading a request body
	// (0: the defaults of httpapi.Limits).
	BodyStallTimeout, BodyReadTimeout time.Duration
	// NoSync turns off fsync on commit (never in production).
	NoSync bool
	// ReloadInterval is how often agent spec files are checked for
	// changes: 0 means DefaultReloadInterval, a negative value never
	// (ReloadGraphs still reloads them).
	ReloadInterval time.Duration
	// CronClock is the clock of the cron scheduler (nil: the wall clock);
	// tests move a fake one and call Crons.FireDue.
	CronClock func() time.Time
}

// DefaultReloadInterval is how often agent spec files are checked for
// changes; a check is one stat call per spec file.
const DefaultReloadInterval = time.Second

// New builds a server from cfg. It binds cfg.Addr first (so a port in use
// stops it before any file is created) but serves only after Start.
func New(cfg config.Config, log *slog.Logger, opts Options) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	log = slog.New(tracing.LogHandler(log.Handler())) // trace_id and span_id on records logged within a span
	ln, err := listen(cfg.Addr)
	if err != nil {
		return nil, err
	}
	var ml *metricsListener
	if cfg.MetricsAddr != "" {
		if ml, err = listenMetrics(cfg.MetricsAddr, log); err != nil {
			ln.Close()
			return nil, err
		}
	}
	s, err := build(cfg, log, opts, ln)
	if err != nil {
		ln.Close()
		ml.close()
		return nil, err
	}
	s.metrics = ml
	return s, nil
}

// listen binds addr. A port in use is reported in one sentence, before the
// server touches any file.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("listen on %s: the address is already in use (is another server running there? choose another with --addr)", addr)
	}
	if err != nil {
		return nil, err // net's error already reads "listen tcp <addr>: …"
	}
	return ln, nil
}

// openDatabase opens PostgreSQL when the configuration names one, else the
// embedded database in the data directory.
func openDatabase(cfg config.Config, opts Options) (*storage.DB, error) {
	if cfg.DatabaseURL != "" {
		return storage.OpenPostgres(cfg.DatabaseURL, storage.Options{NoSync: opts.NoSync, Lease: cfg.RunLease})
	}
	return storage.Open(cfg.DataDir, storage.Options{NoSync: opts.NoSync})
}

// build assembles the services over the data directory; ln is bound but
// not yet served.
func build(cfg config.Config, log *slog.Logger, opts Options, ln net.Listener) (_ *Server, err error) {
	var replicaID string
	var releaseReplica func()
	if cfg.DatabaseURL != "" {
		var err error
		if replicaID, releaseReplica, err = replicaIdentity(cfg.DataDir); err != nil {
			return nil, err
		}
	}
	db, err := openDatabase(cfg, opts)
	if err != nil {
		if releaseReplica != nil {
			releaseReplica()
		}
		return nil, err
	}
	if releaseReplica != nil {
		db.AfterClose(releaseReplica)
	}
	reducers := channels.NewRegistry()
	st := store.New(db, log)
	authConfig, err := config.LoadAuth(cfg.GraphsFile)
	if err != nil {
		db.Close()
		return nil, err
	}
	httpConfig, err := config.LoadHTTP(cfg.GraphsFile)
	if err != nil {
		db.Close()
		return nil, err
	}
	pool, err := startJSGraphs(cfg, log, st, baseURL(ln.Addr()), authConfig.Module, httpConfig.App)
	if err != nil {
		db.Close()
		return nil, err
	}
	defer func() {
		if err != nil && pool != nil {
			pool.Close(context.Background())
		}
	}()
	reg, agents, err := loadGraphs(cfg, log, reducers, db, codeResolver(pool))
	if err != nil {
		db.Close()
		return nil, err
	}
	ttls, err := config.LoadTTLs(cfg.GraphsFile)
	if err != nil {
		db.Close()
		return nil, err
	}
	auth, verifier, err := buildAuth(cfg, authConfig, pool)
	if err != nil {
		db.Close()
		return nil, err
	}
	webhooks, err := webhookPolicy(cfg, auth)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, db: db, ln: ln, Graphs: reg, Reducers: reducers, reloadEvery: opts.ReloadInterval, jsGraphs: pool, verifier: verifier}
	if s.reloadEvery == 0 {
		s.reloadEvery = DefaultReloadInterval
	}
	s.Threads = threads.New(db, s.Reducers)
	s.Threads.SetStateUpdaters(graphUpdaters(reg))
	s.Threads.Configure(threads.TTLConfig{Strategy: ttls.Threads.Strategy, DefaultTTL: ttls.Threads.DefaultTTL, SweepInterval: ttls.Threads.SweepInterval, SweepLimit: ttls.Threads.SweepLimit}, log, agents.threadDeleted)
	s.Assistants = assistants.New(db, reg)
	s.Store = st
	db.OnNotice(s.Store.Notice)
	if err := s.Store.Configure(store.TTLConfig{DefaultTTL: ttls.Store.DefaultTTL, RefreshOnRead: ttls.Store.RefreshOnRead, SweepInterval: ttls.Store.SweepInterval}); err != nil {
		db.Close()
		return nil, fmt.Errorf("store ttl: %w", err)
	}
	if err := configureStoreIndex(s.Store, cfg.GraphsFile, log); err != nil {
		db.Close()
		return nil, fmt.Errorf("store index: %w", err)
	}
	s.Broker = events.NewBroker(events.StorageAdapter{DB: db}, events.BrokerOptions{Log: log, Retention: cfg.StreamRetention, MemoryRetention: 5 * time.Second})
	s.Runs = runs.New(db, s.Threads, s.Assistants, reg, s.Reducers, s.Broker, runs.Options{Workers: cfg.Jobs, Log: log, Retention: cfg.StreamRetention, Timeout: cfg.RunTimeout, StopGrace: cfg.RunStopGrace,
		ReplicaID: replicaID, AdvertiseURL: advertiseURL(cfg.AdvertiseURL, ln), PeerAPIKey: cfg.APIKey, Webhooks: webhooks, Authorizer: auth.Authorizer})
	s.Stream = protostream.NewHub(db, protostream.Options{Retention: cfg.StreamRetention, Log: log})
	s.Runs.SetThreadObserver(s.Stream)
	s.Crons = crons.New(db, s.Runs, s.Assistants, crons.Options{Now: opts.CronClock, Seconds: cfg.CronSeconds, MaxPerOwner: cfg.MaxCrons, Authorizer: auth.Authorizer, Log: log})
	agents.local.Bind(s.Threads, s.Runs)
	agents.notifier.Bind(s.Threads, s.Runs)
	s.Runs.SetCreationObserver(agents.notifier)
	s.agents = agents
	s.reloader = graphs.NewReloader(reg, agents.resolve, log)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Assistants.EnsureSystemAssistants(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("create system assistants: %w", err)
	}
	e, err := httpapi.New(httpapi.Deps{
		DB: db, Graphs: reg, Threads: s.Threads, Assistants: s.Assistants, Store: s.Store, Runs: s.Runs, Crons: s.Crons,
		Log: log, Auth: auth, Limits: httpapi.Limits{MaxBodyBytes: int64(cfg.MaxBodyBytes), BodyStallTimeout: opts.BodyStallTimeout, BodyReadTimeout: opts.BodyReadTimeout}, ThreadDeleted: agents.threadDeleted, CancelSubagent: agents.env.Live.Cancel,
		Stream:    s.Stream,
		NoMetrics: cfg.MetricsAddr != "",
		Mounts:    s.protocolMounts(),
		Custom:    customRoutes(httpConfig, pool),
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	reqCtx, reqCancel := context.WithCancel(context.Background())
	s.reqCancel = reqCancel
	s.http = &http.Server{
		Handler:           e,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ReadHeaderTimeout: readHeaderTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return s, nil
}

// UnlistedRoutes returns the served routes that httpapi's route table
// does not list (see httpapi.Unlisted).
func (s *Server) UnlistedRoutes() ([]string, error) {
	e, ok := s.http.Handler.(*echo.Echo)
	if !ok {
		return nil, errors.New("the HTTP handler is not the API's router")
	}
	return httpapi.Unlisted(e)
}

// protocolMounts are the MCP and A2A endpoints.
func (s *Server) protocolMounts() map[string]http.Handler {
	a2aHandler := a2a.New(a2a.Deps{Assistants: s.Assistants, Threads: s.Threads, Runs: s.Runs})
	return map[string]http.Handler{
		"/mcp":                         mcpserver.New(mcpserver.Deps{Assistants: s.Assistants, Threads: s.Threads, Runs: s.Runs, Log: s.log}),
		"/a2a":                         a2aHandler,
		"/.well-known/agent-card.json": a2aHandler,
	}
}

// Start starts background workers and begins serving on cfg.Addr. When it
// fails, the caller still calls Shutdown to release what was started.
func (s *Server) Start() error {
	ln := s.ln
	bgCtx, cancel := context.WithCancel(context.Background())
	s.bgCancel = cancel
	s.bg.Add(2)
	go func() {
		defer s.bg.Done()
		s.Store.Run(bgCtx)
	}()
	go func() {
		defer s.bg.Done()
		s.Broker.Run(bgCtx)
	}()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.Stream.Run(bgCtx)
	}()
	if s.verifier != nil {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.verifier.Run(bgCtx)
		}()
	}
	if s.reloadEvery > 0 {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.reloader.Run(bgCtx, s.reloadEvery)
		}()
	}
	if s.cfg.Watch && s.jsGraphs != nil && s.reloadEvery > 0 {
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			s.watchJSGraphs(bgCtx)
		}()
	}
	if n, err := subagents.RecoverInterrupted(bgCtx, s.db); err != nil {
		return fmt.Errorf("recover subagents: %w", err)
	} else if n > 0 {
		s.log.Warn("subagents cut off by a restart are reported as interrupted", "count", n)
	}
	if err := s.Runs.Start(bgCtx); err != nil {
		return fmt.Errorf("recover runs: %w", err)
	}
	s.bg.Add(2)
	go func() {
		defer s.bg.Done()
		s.Threads.RunSweeper(bgCtx)
	}()
	go func() {
		defer s.bg.Done()
		s.Crons.Run(bgCtx)
	}()
	s.unregister = metrics.AddQueueSource(s.Runs)
	s.metrics.serve()
	s.serveErr = make(chan error, 1)
	go func() {
		err := s.http.Serve(httpapi.JSONFramingErrors(ln))
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.serveErr <- err
	}()
	base := baseURL(ln.Addr())
	attrs := []any{"addr", ln.Addr().String(), "api", base, "docs", base + "/docs", "console", base + console.Prefix + "/", "data_dir", s.cfg.DataDir}
	if s.cfg.DatabaseURL != "" {
		attrs = append(attrs, "database", s.db.Describe()) // without the password
	}
	s.log.Info("serving", append(attrs, "graphs", s.Graphs.IDs())...)
	return nil
}

// ReloadGraphs recompiles every graph served from an agent spec file now,
// changed or not (the command calls it on SIGHUP). A spec that fails keeps
// its previous version and is logged.
func (s *Server) ReloadGraphs() {
	s.reloader.ReloadAll()
}

// Addr is the address the server listens on (useful with port 0).
func (s *Server) Addr() string {
	return s.ln.Addr().String()
}

// MetricsURL is the base URL of the metrics listener ("" when
// cfg.MetricsAddr is not set).
func (s *Server) MetricsURL() string {
	if s.metrics == nil {
		return ""
	}
	return "http://" + s.metrics.ln.Addr().String()
}

// URL is the base URL of the server.
func (s *Server) URL() string {
	return "http://" + s.Addr()
}

// Shutdown stops the server in order: runs (each goes back to pending, to
// resume at the next start), long-lived requests, HTTP, background workers,
// storage.
// It is safe to call more than once; later calls return the first result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Server) shutdown(ctx context.Context) error {
	var errs []error
	s.http.SetKeepAlivesEnabled(false)
	s.agents.notifier.Close()
	if err := s.Runs.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if s.jsGraphs != nil {
		// After the runs: each stopped run has been requeued.
		if err := s.jsGraphs.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("graph workers: %w", err))
		}
	}
	s.reqCancel()
	if err := s.agents.mcp.Close(); err != nil {
		s.log.Warn("closing MCP sessions", "err", err)
	}
	if s.serveErr != nil { // serving: stop it and wait for Serve to return
		if err := s.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		if err := <-s.serveErr; err != nil {
			errs = append(errs, fmt.Errorf("serve: %w", err))
		}
	} else {
		s.ln.Close() // bound by New, never served (Start failed or was not called)
	}
	if err := s.metrics.shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if s.unregister != nil {
		s.unregister()
	}
	if s.bgCancel != nil {
		s.bgCancel()
	}
	s.bg.Wait()
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("close storage: %w", err))
	}
	return errors.Join(errs...)
}

// Handler is the server's HTTP handler, for in-process use without a listener.
func (s *Server) Handler() http.Handler {
	return s.http.Handler
}

// Connection limits of the HTTP server. There is no whole-request read
// timeout: net/http would cancel a stream's context when it expired; the
// body's read deadline is set by httpapi while it reads the body. Streams
// and waits move their write deadline forward with every write they make,
// so only a response that stalls is cut by writeTimeout. Errors net/http
// answers before any handler runs are rewritten to the JSON error body by
// the listener (httpapi.JSONFramingErrors).
const (
	readHeaderTimeout = 10 * time.Second
	writeTimeout      = 60 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 64 << 10
)

// DB is the server's database, for tests and offline checks.
func (s *Server) DB() *storage.DB {
	return s.db
}

// baseURL is the URL a person opens for a listener: an unspecified host
// (all interfaces) reads as localhost.
func baseURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
