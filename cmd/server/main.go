// Command server runs the Agent Protocol server. With no flags it serves the
// graphs of ./langgraph.json on 127.0.0.1:2024 and keeps its data in ./data.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"agentserver/internal/config"
	"agentserver/internal/server"
)

func main() {
	if err := run(); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "server:", err)
		}
		os.Exit(1)
	}
}

func run() error {
	cfg, err := config.Parse(os.Args[1:], os.Getenv, os.Stderr)
	if err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		return err
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	srv, err := server.New(cfg, log, server.Options{})
	if err != nil {
		return err
	}
	stopReload := reloadOnHangup(srv, log) // before Start: a ready server handles SIGHUP
	defer stopReload()
	if err := srv.Start(); err != nil {
		return errors.Join(err, srv.Shutdown(context.Background()))
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}
