// Command server runs the Agent Protocol server. With no flags it serves the
// graphs of ./langgraph.json on 127.0.0.1:2024 and keeps its data in ./data.
// --help lists the flags and their environment variables.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"agentserver/internal/config"
	"agentserver/internal/logging"
	"agentserver/internal/server"
	"agentserver/internal/tracing"
	"agentserver/internal/version"
)

// Exit codes: 2 for a bad command line or environment (a --config file
// that is not there included), 1 for anything else.
const (
	exitError = 1
	exitUsage = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := config.Parse(args, os.Getenv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		config.Usage(stdout)
		return 0
	case errors.Is(err, config.ErrVersion):
		fmt.Fprintln(stdout, version.Get())
		return 0
	case errors.Is(err, config.ErrUsage):
		fmt.Fprintln(stderr, "server:", err)
		fmt.Fprintln(stderr, "Run 'server --help' for the flags and their environment variables.")
		return exitUsage
	case err != nil:
		fmt.Fprintln(stderr, "server:", err)
		return exitUsage
	}
	if err := config.CheckGraphsFile(cfg.GraphsFile); err != nil {
		fmt.Fprintln(stderr, "server:", err)
		return exitUsage
	}
	if err := serve(cfg, stderr); err != nil {
		fmt.Fprintln(stderr, "server:", err)
		return exitError
	}
	return 0
}

// serve runs the server until SIGINT or SIGTERM.
func serve(cfg config.Config, stderr io.Writer) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return err
	}
	log, err := logging.New(stderr, cfg.LogFormat, level)
	if err != nil {
		return err
	}
	stopTracing, err := tracing.Setup(context.Background(), log)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		if err := stopTracing(ctx); err != nil { // sends the last spans
			log.Warn("flush traces", "err", err)
		}
	}()
	srv, err := server.New(cfg, log, server.Options{})
	if err != nil {
		return err
	}
	stopReload := reloadOnHangup(srv, log) // before Start: a ready server handles SIGHUP
	defer stopReload()
	shutdown := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		defer cancel()
		return srv.Shutdown(ctx)
	}
	if err := srv.Start(); err != nil {
		return errors.Join(err, shutdown())
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	if err := shutdown(); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}
