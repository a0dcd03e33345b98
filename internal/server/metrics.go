package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"agentserver/internal/lifecycle"
	"agentserver/internal/metrics"
)

// metricsListener serves GET /metrics alone, without the API key, on the
// address of --metrics-addr. Its methods do nothing on a nil receiver.
type metricsListener struct {
	ln   net.Listener
	http *http.Server
	done chan struct{}
	log  *slog.Logger
}

// listenMetrics binds addr for the metrics listener.
func listenMetrics(addr string, log *slog.Logger) (*metricsListener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	return &metricsListener{ln: ln, http: srv, log: log}, nil
}

// serve starts answering scrapes.
func (m *metricsListener) serve() {
	if m == nil {
		return
	}
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		if err := m.http.Serve(m.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("metrics listener stopped", "err", err)
		}
	}()
	m.log.Info("serving metrics", "addr", m.ln.Addr().String())
}

// shutdown stops the listener and waits for its goroutine.
func (m *metricsListener) shutdown(ctx context.Context) error {
	if m == nil {
		return nil
	}
	if m.done == nil {
		return m.ln.Close()
	}
	err := m.http.Shutdown(ctx)
	<-m.done
	if err != nil {
		return fmt.Errorf("metrics shutdown: %w", err)
	}
	return nil
}

// service is the listener as a background service: Start serves, Stop
// shuts it down.
func (m *metricsListener) service() lifecycle.Service {
	return lifecycle.Hooks{
		OnStart: func(context.Context) error {
			m.serve()
			return nil
		},
		OnStop: m.shutdown,
	}
}

// close releases a listener that was never served.
func (m *metricsListener) close() {
	if m != nil {
		m.ln.Close()
	}
}
