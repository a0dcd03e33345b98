package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"agentserver/internal/tracing"
)

// otlpSink is an OTLP/HTTP endpoint on 127.0.0.1 that accepts every export
// and throws it away, so that a server under load can run with tracing on
// (-otlp-sink) without a collector. It counts what it received, which shows
// that spans really left the server.
type otlpSink struct {
	srv      *http.Server
	url      string
	requests atomic.Int64
	bytes    atomic.Int64
}

// startOTLPSink listens on a free 127.0.0.1 port and serves the sink.
func startOTLPSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{url: "http://" + ln.Addr().String()}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Println("otlp sink:", err)
		}
	}()
	return s, nil
}

// ServeHTTP reads and discards one export and answers it with an empty
// (so successful) protobuf response.
func (s *otlpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	s.requests.Add(1)
	s.bytes.Add(n)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// summary says what the sink received.
func (s *otlpSink) summary() string {
	return fmt.Sprintf("%d exports, %.1f MiB", s.requests.Load(), float64(s.bytes.Load())/(1<<20))
}

func (s *otlpSink) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// startTracingSink starts the sink and points OTEL_EXPORTER_OTLP_ENDPOINT at
// it, so that every server child inherits it; in-process, it installs the
// tracer provider itself (cmd/server does it for a child). The returned
// function flushes the spans, stops the sink and prints what it received.
func startTracingSink(ctx context.Context, inProcess bool) (stop func(), err error) {
	sink, err := startOTLPSink()
	if err != nil {
		return nil, err
	}
	if err := os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.url); err != nil {
		return nil, errors.Join(err, sink.close())
	}
	stopTracing := func(context.Context) error { return nil }
	if inProcess {
		// The in-process server logs nothing either (server.go).
		if stopTracing, err = tracing.Setup(ctx, slog.New(slog.DiscardHandler)); err != nil {
			return nil, errors.Join(err, sink.close())
		}
	}
	fmt.Printf("tracing on: OTEL_EXPORTER_OTLP_ENDPOINT=%s (a sink that discards the spans)\n", sink.url)
	return func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := stopTracing(flushCtx); err != nil {
			fmt.Println("otlp sink: flushing spans:", err)
		}
		fmt.Println("otlp sink received:", sink.summary())
		sink.close()
	}, nil
}
