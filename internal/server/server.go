package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
	"agentserver/internal/lifecycle"
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
	cfg config.Config
	log *slog.Logger
	db  *storage.DB
	// replicaID is this server's id among the replicas of a shared
	// database ("" on the embedded one).
	replicaID string
	http      *http.Server
	ln        net.Listener

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

	// life holds every resource New opened and every service Start
	// started, in order; Shutdown stops them in reverse (see doc.go).
	life lifecycle.Group
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
	// Clock is the one clock handed to every service that reads the
	// time (nil: the wall clock, in UTC).
	Clock func() time.Time
	// CronClock, when set, is the cron scheduler's clock instead of
	// Clock; tests move a fake one and call Crons.FireDue.
	CronClock func() time.Time
}

// DefaultReloadInterval is how often agent spec files are checked for
// changes; a check is one stat call per spec file.
const DefaultReloadInterval = time.Second

// New builds a server from cfg. It binds cfg.Addr first (so a port in use
// stops it before any file is created) but serves only after Start. On an
// error it releases everything it opened, in reverse order.
func New(cfg config.Config, log *slog.Logger, opts Options) (_ *Server, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	log = slog.New(tracing.LogHandler(log.Handler())) // trace_id and span_id on records logged within a span
	s := &Server{cfg: cfg, log: log, reloadEvery: opts.ReloadInterval}
	if s.reloadEvery == 0 {
		s.reloadEvery = DefaultReloadInterval
	}
	defer func() {
		if err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
			defer cancel()
			err = errors.Join(err, s.life.Stop(ctx))
		}
	}()
	if s.ln, err = listen(cfg.Addr); err != nil {
		return nil, err
	}
	s.life.Opened("listener", func(context.Context) error {
		s.ln.Close() // already closed once served; the error says only that
		return nil
	})
	if cfg.MetricsAddr != "" {
		if s.metrics, err = listenMetrics(cfg.MetricsAddr, log); err != nil {
			return nil, err
		}
		s.life.Opened("metrics listener", func(context.Context) error {
			s.metrics.close()
			return nil
		})
	}
	if err := s.build(opts); err != nil {
		return nil, err
	}
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
func openDatabase(cfg config.Config, opts Options, log *slog.Logger) (*storage.DB, error) {
	if cfg.DatabaseURL != "" {
		return storage.OpenPostgres(cfg.DatabaseURL, storage.Options{NoSync: opts.NoSync, Lease: cfg.RunLease, Log: log})
	}
	return storage.Open(cfg.DataDir, storage.Options{NoSync: opts.NoSync, Log: log})
}

// build assembles the services over the data directory; s.ln is bound but
// not yet served. Every resource it opens is added to s.life as soon as it
// is open, so that New's one cleanup path releases it on an error.
func (s *Server) build(opts Options) error {
	cfg, log, clock := s.cfg, s.log, lifecycle.ClockOr(opts.Clock)
	if cfg.DatabaseURL != "" {
		id, release, err := replicaIdentity(cfg.DataDir)
		if err != nil {
			return err
		}
		s.replicaID = id
		s.life.Opened("replica lock", func(context.Context) error {
			release()
			return nil
		})
	}
	db, err := openDatabase(cfg, opts, log)
	if err != nil {
		return err
	}
	s.db = db
	s.life.Opened("storage", func(context.Context) error {
		if err := db.Close(); err != nil {
			return fmt.Errorf("close storage: %w", err)
		}
		return nil
	})
	s.Reducers = channels.NewRegistry()
	authConfig, err := config.LoadAuth(cfg.GraphsFile)
	if err != nil {
		return err
	}
	httpConfig, err := config.LoadHTTP(cfg.GraphsFile)
	if err != nil {
		return err
	}
	ttls, err := config.LoadTTLs(cfg.GraphsFile)
	if err != nil {
		return err
	}
	st, err := store.New(db, store.Options{Log: log, Clock: clock, TTL: &store.TTLConfig{DefaultTTL: ttls.Store.DefaultTTL, RefreshOnRead: ttls.Store.RefreshOnRead, SweepInterval: ttls.Store.SweepInterval}})
	if err != nil {
		return fmt.Errorf("store ttl: %w", err)
	}
	s.Store = st
	pool, err := startJSGraphs(cfg, log, st, baseURL(s.ln.Addr()), authConfig.Module, httpConfig.App)
	if err != nil {
		return err
	}
	if pool != nil {
		s.jsGraphs = pool
		// Drained after the run engine: each stopped run has been
		// requeued before its worker goes.
		s.life.OpenedDrain("graph workers", func(ctx context.Context) error {
			if err := pool.Close(ctx); err != nil {
				return fmt.Errorf("graph workers: %w", err)
			}
			return nil
		})
	}
	reg, agents, err := loadGraphs(cfg, log, clock, s.Reducers, db, codeResolver(pool))
	if err != nil {
		return err
	}
	s.Graphs, s.agents = reg, agents
	s.life.OpenedDrain("MCP sessions", func(context.Context) error {
		if err := agents.mcp.Close(); err != nil {
			log.Warn("closing MCP sessions", "err", err)
		}
		return nil
	})
	auth, verifier, err := buildAuth(cfg, authConfig, pool)
	if err != nil {
		return err
	}
	s.verifier = verifier
	webhooks, err := webhookPolicy(cfg, auth)
	if err != nil {
		return err
	}
	s.Threads = threads.New(db, s.Reducers, threads.Options{
		TTL: threads.TTLConfig{Strategy: ttls.Threads.Strategy, DefaultTTL: ttls.Threads.DefaultTTL, SweepInterval: ttls.Threads.SweepInterval, SweepLimit: ttls.Threads.SweepLimit},
		Log: log, Clock: clock, Deleted: agents.threadDeleted, StateUpdaters: graphUpdaters(reg),
	})
	s.Assistants = assistants.New(db, reg)
	db.OnNotice(s.Store.Notice)
	if err := configureStoreIndex(s.Store, cfg.GraphsFile, log); err != nil {
		return fmt.Errorf("store index: %w", err)
	}
	s.Broker = events.NewBroker(events.StorageAdapter{DB: db}, events.BrokerOptions{Log: log, Retention: cfg.StreamRetention, MemoryRetention: 5 * time.Second})
	s.Stream = protostream.NewHub(db, protostream.Options{Retention: cfg.StreamRetention, Log: log})
	// One wiring step stays after construction: the run engine and the
	// async-task notifier need each other (runs report creations to the
	// notifier, the notifier creates runs), so the notifier and the
	// in-process transport are bound once the engine exists.
	s.Runs = runs.New(db, s.Threads, s.Assistants, reg, s.Reducers, s.Broker, runs.Options{Workers: cfg.Jobs, Log: log, Retention: cfg.StreamRetention, Timeout: cfg.RunTimeout, StopGrace: cfg.RunStopGrace,
		ReplicaID: s.replicaID, AdvertiseURL: advertiseURL(cfg.AdvertiseURL, s.ln), PeerAPIKey: cfg.APIKey, Webhooks: webhooks, Authorizer: auth.Authorizer,
		ThreadObserver: s.Stream, CreationObserver: agents.notifier, Clock: clock})
	cronClock := clock
	if opts.CronClock != nil {
		cronClock = opts.CronClock
	}
	s.Crons = crons.New(db, s.Runs, s.Assistants, crons.Options{Now: cronClock, Seconds: cfg.CronSeconds, MaxPerOwner: cfg.MaxCrons, Authorizer: auth.Authorizer, Log: log})
	agents.local.Bind(s.Threads, s.Runs)
	agents.notifier.Bind(s.Threads, s.Runs)
	if pool != nil {
		agents.notifier.FollowStoredCallbacks()
	}
	s.reloader = graphs.NewReloader(reg, agents.resolve, log)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Assistants.EnsureSystemAssistants(ctx); err != nil {
		return fmt.Errorf("create system assistants: %w", err)
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
		return err
	}
	// Long-lived requests (streams, waits) end when the group drains.
	reqCtx, reqCancel := context.WithCancel(context.Background())
	s.life.OpenedDrain("long requests", func(context.Context) error {
		reqCancel()
		return nil
	})
	s.http = &http.Server{
		Handler:           e,
		BaseContext:       func(net.Listener) context.Context { return reqCtx },
		ReadHeaderTimeout: readHeaderTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	return nil
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

// Start starts the background services in order and begins serving on
// cfg.Addr. When one fails to start, Start stops the ones it started and
// releases what New opened, and returns the error; Shutdown then does
// nothing more.
func (s *Server) Start() error {
	for _, svc := range s.services() {
		if err := s.startService(svc); err != nil {
			return err
		}
	}
	base := baseURL(s.ln.Addr())
	attrs := []any{"addr", s.ln.Addr().String(), "api", base, "docs", base + "/docs", "console", base + console.Prefix + "/", "data_dir", s.cfg.DataDir}
	if s.cfg.DatabaseURL != "" {
		attrs = append(attrs, "database", s.db.Describe()) // without the password
	}
	s.log.Info("serving", append(attrs, "graphs", s.Graphs.IDs())...)
	return nil
}

// service is one background service in the start order.
type service struct {
	name string
	svc  lifecycle.Service
}

// services lists the background services in start order; they stop in the
// reverse order (see doc.go). Services a configuration leaves out are not
// listed.
func (s *Server) services() []service {
	out := []service{
		{"store ttl sweeper", lifecycle.Loop(s.Store.Run)},
		{"event broker", lifecycle.Loop(s.Broker.Run)},
		{"protocol stream hub", lifecycle.Loop(s.Stream.Run)},
	}
	if s.verifier != nil {
		out = append(out, service{"jwt key refresh", lifecycle.Loop(s.verifier.Run)})
	}
	if s.reloadEvery > 0 {
		out = append(out, service{"agent spec reloader", lifecycle.Loop(func(ctx context.Context) { s.reloader.Run(ctx, s.reloadEvery) })})
	}
	if s.cfg.Watch && s.jsGraphs != nil && s.reloadEvery > 0 {
		out = append(out, service{"graph watcher", lifecycle.Loop(s.watchJSGraphs)})
	}
	return append(out,
		service{"subagent recovery", lifecycle.Hooks{OnStart: func(ctx context.Context) error {
			if n, err := subagents.RecoverInterrupted(ctx, s.db, s.replicaID); err != nil {
				return fmt.Errorf("recover subagents: %w", err)
			} else if n > 0 {
				s.log.Warn("subagents cut off by a restart are reported as interrupted", "count", n)
			}
			return nil
		}}},
		// Drained before the graph workers, requests and MCP sessions:
		// every run goes back to pending, to resume at the next start.
		service{"run engine", lifecycle.Hooks{
			OnStart: func(ctx context.Context) error {
				if err := s.Runs.Start(ctx); err != nil {
					return fmt.Errorf("recover runs: %w", err)
				}
				return nil
			},
			OnDrain: s.Runs.Shutdown,
		}},
		// After the runs are recovered.
		service{"thread ttl sweeper", lifecycle.Loop(s.Threads.RunSweeper)},
		service{"cron scheduler", lifecycle.Loop(s.Crons.Run)},
		// Drained first of the services that take work: no completion
		// starts a run while the engine stops.
		service{"async task notifier", lifecycle.Hooks{OnDrain: func(context.Context) error {
			s.agents.notifier.Close()
			return nil
		}}},
		service{"queue metrics", queueMetrics(s.Runs)},
		service{"metrics listener", s.metrics.service()},
		service{"http", s.httpService()},
	)
}

// startService starts one service of the group; a failure stops the group
// within the shutdown timeout.
func (s *Server) startService(svc service) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	return s.life.Start(context.Background(), ctx, svc.name, svc.svc)
}

// queueMetrics reports the run queue in the metrics while it runs.
func queueMetrics(src metrics.QueueSource) lifecycle.Service {
	var unregister func()
	return lifecycle.Hooks{
		OnStart: func(context.Context) error {
			unregister = metrics.AddQueueSource(src)
			return nil
		},
		OnStop: func(context.Context) error {
			if unregister != nil {
				unregister()
			}
			return nil
		},
	}
}

// httpService serves the API on the listener New bound. Draining turns
// keep-alives off (connections close after their current request);
// stopping stops accepting, finishes in-flight requests and waits for
// Serve to return.
func (s *Server) httpService() lifecycle.Service {
	var serveErr chan error
	return lifecycle.Hooks{
		OnStart: func(context.Context) error {
			serveErr = make(chan error, 1)
			go func() {
				err := s.http.Serve(httpapi.JSONFramingErrors(s.ln))
				if errors.Is(err, http.ErrServerClosed) {
					err = nil
				}
				serveErr <- err
			}()
			return nil
		},
		OnDrain: func(context.Context) error {
			s.http.SetKeepAlivesEnabled(false)
			return nil
		},
		OnStop: func(ctx context.Context) error {
			var errs []error
			if err := s.http.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("http shutdown: %w", err))
			}
			if err := <-serveErr; err != nil {
				errs = append(errs, fmt.Errorf("serve: %w", err))
			}
			return errors.Join(errs...)
		},
	}
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

// Shutdown stops the server: the background services in the reverse
// order of their start, draining first (HTTP keep-alives off, the async
// task notifier, the run engine, whose runs resume at the next start, the
// graph workers, long-lived requests, MCP sessions), then stopping (HTTP,
// metrics, the background loops), then storage and the listeners.
// It is safe to call more than once; later calls return the first result.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.life.Stop(ctx)
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
