package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
)

// sdkReports hears what the OpenTelemetry SDK reports. The SDK logs
// through otel's global logr logger (an unusable URL, duration, header or
// certificate at Error level, an unusable number at V(4) with the
// variable's name as the key, a protocol it will not use at V(1)) or hands
// an error to otel's global error handler (an unsupported sampler or
// ratio), and goes on with its default in every case. While Setup builds
// the provider (while), such a report is kept and becomes Setup's error;
// every other report goes to the server's log.
type sdkReports struct {
	log *slog.Logger

	mu   sync.Mutex
	kept *[]string // the reports of the piece being built; nil between pieces
}

// listenToSDK makes a new sdkReports the SDK's global logger and error
// handler.
func listenToSDK(log *slog.Logger) *sdkReports {
	r := &sdkReports{log: log.With("component", "opentelemetry")}
	otel.SetErrorHandler(r)
	otel.SetLogger(logr.FromSlogHandler(sdkLog{r: r, next: r.log.Handler()}))
	return r
}

// while runs build, one piece of the SDK that reads the variables named by
// prefixes, and returns an error for each report it made (and for the
// error it returned), naming the variables to blame.
func (r *sdkReports) while(prefixes []string, build func() error) error {
	var kept []string
	r.mu.Lock()
	r.kept = &kept
	r.mu.Unlock()
	err := build()
	r.mu.Lock()
	r.kept = nil
	r.mu.Unlock()
	if err != nil {
		kept = append(kept, err.Error())
	}
	errs := make([]error, 0, len(kept))
	for _, report := range kept {
		errs = append(errs, fmt.Errorf("tracing: %s: unusable for the OpenTelemetry SDK: %s", strings.Join(culprits(prefixes, report), ", "), report))
	}
	return errors.Join(errs...)
}

// keep keeps report when a piece is being built, and reports whether it
// did.
func (r *sdkReports) keep(report string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kept == nil {
		return false
	}
	*r.kept = append(*r.kept, report)
	return true
}

func (r *sdkReports) building() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kept != nil
}

// Handle implements otel.ErrorHandler.
func (r *sdkReports) Handle(err error) {
	if !r.keep(err.Error()) {
		r.log.Warn("the OpenTelemetry SDK reported an error", "err", err)
	}
}

// culprits names the variables set in the environment, among those that
// start with one of prefixes, that report names or whose value it quotes;
// all that are set when it does neither.
func culprits(prefixes []string, report string) []string {
	var set, named []string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if value == "" || !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		set = append(set, name)
		if strings.Contains(report, name) || strings.Contains(report, value) {
			named = append(named, name)
		}
	}
	if len(named) == 0 {
		named = set
	}
	if len(named) == 0 {
		named = prefixes
	}
	slices.Sort(named)
	return named
}

// sdkLog is the slog side of the SDK's logr logger: while a piece is
// being built it keeps the records that say a value was unusable, and it
// passes every other record to next.
type sdkLog struct {
	r    *sdkReports
	next slog.Handler
}

// Enabled implements slog.Handler. While a piece is being built every
// level is heard: an unusable number is reported at V(4).
func (h sdkLog) Enabled(ctx context.Context, level slog.Level) bool {
	return h.r.building() || h.next.Enabled(ctx, level)
}

// Handle implements slog.Handler.
func (h sdkLog) Handle(ctx context.Context, rec slog.Record) error {
	if unusable(rec) && h.r.keep(recordText(rec)) {
		return nil
	}
	if !h.next.Enabled(ctx, rec.Level) {
		return nil
	}
	return h.next.Handle(ctx, rec)
}

// WithAttrs implements slog.Handler.
func (h sdkLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return sdkLog{r: h.r, next: h.next.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h sdkLog) WithGroup(name string) slog.Handler {
	return sdkLog{r: h.r, next: h.next.WithGroup(name)}
}

// unusable reports whether a record of the SDK says a value could not be
// used: an error or a warning (logr's V(1) is slog level -1), or a record
// keyed by an OTEL_ variable.
func unusable(rec slog.Record) bool {
	if rec.Level >= -1 {
		return true
	}
	found := false
	rec.Attrs(func(a slog.Attr) bool {
		found = strings.HasPrefix(a.Key, "OTEL_")
		return !found
	})
	return found
}

// recordText is a record as one line: the message, its error, then its
// other attributes.
func recordText(rec slog.Record) string {
	var b strings.Builder
	b.WriteString(rec.Message)
	var rest []string
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			fmt.Fprintf(&b, ": %v", a.Value)
		} else {
			rest = append(rest, a.String())
		}
		return true
	})
	if len(rest) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(rest, ", "))
	}
	return b.String()
}
