package main

import (
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"agentserver/internal/server"
)

// reloadOnHangup reloads the agent spec files of srv on every SIGHUP, as
// an edit of a spec file does, until the returned function is called; that
// function returns once the goroutine it started has ended.
func reloadOnHangup(srv *server.Server, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-hup:
				log.Info("SIGHUP: reloading agent specs")
				srv.ReloadGraphs()
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(quit)
		<-done
	}
}
