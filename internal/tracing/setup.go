package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// installed is the SDK provider Setup installed, nil while tracing is off.
var installed atomic.Pointer[sdktrace.TracerProvider]

// Enabled reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or
// OTEL_EXPORTER_OTLP_ENDPOINT), OTEL_SDK_DISABLED is not true and
// OTEL_TRACES_EXPORTER is not none.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Setup installs the process-wide tracer provider when the process
// environment asks for traces (Enabled): the OpenTelemetry SDK's, with its
// batch span processor and OTLP/HTTP exporter, each configured by the
// standard OTEL_* variables as the SDK reads them. A variable the SDK
// cannot use (it logs that and goes on with its default) is an error here
// that names it, and so are the few values the SDK accepts silently but
// would not honour (checkEnv). What the SDK reports later (a collector
// that refuses spans, say) goes to log. The returned function sends the
// spans not yet sent and stops tracing; with tracing off it does nothing.
func Setup(ctx context.Context, log *slog.Logger) (shutdown func(context.Context) error, err error) {
	if !Enabled(os.Getenv) {
		return func(context.Context) error { return nil }, nil
	}
	if err := checkEnv(os.Getenv); err != nil {
		return nil, err
	}
	reports := listenToSDK(log)
	tp, err := newProvider(ctx, reports)
	if err != nil {
		return nil, err
	}
	otel.SetTracerProvider(tp)
	installed.Store(tp)
	use(tp)
	return func(ctx context.Context) error {
		use(noop.NewTracerProvider())
		installed.CompareAndSwap(tp, nil)
		return tp.Shutdown(ctx)
	}, nil
}

// Flush sends the spans ended so far and waits until they are sent (or
// ctx ends); with tracing off it does nothing.
func Flush(ctx context.Context) error {
	if tp := installed.Load(); tp != nil {
		return tp.ForceFlush(ctx)
	}
	return nil
}

// newProvider builds the SDK's pieces one at a time, so that what the SDK
// reports while one reads the environment is laid to that piece's
// variables; on an error, what was built is shut down.
func newProvider(ctx context.Context, reports *sdkReports) (*sdktrace.TracerProvider, error) {
	var res *resource.Resource
	err := reports.while(resourceVars, func() (err error) {
		res, err = resource.New(ctx,
			resource.WithAttributes(attribute.String("service.name", ServiceName)), // unless the environment names one
			resource.WithFromEnv(), resource.WithTelemetrySDK())
		return err
	})
	if err != nil {
		return nil, err
	}
	var exp *otlptrace.Exporter
	if err := reports.while(exporterVars, func() (err error) { exp, err = otlptracehttp.New(ctx); return err }); err != nil {
		if exp != nil {
			err = errors.Join(err, exp.Shutdown(ctx))
		}
		return nil, err
	}
	var bsp sdktrace.SpanProcessor
	if err := reports.while(batchVars, func() error { bsp = sdktrace.NewBatchSpanProcessor(exp); return nil }); err != nil {
		return nil, errors.Join(err, bsp.Shutdown(ctx))
	}
	var tp *sdktrace.TracerProvider
	err = reports.while(providerVars, func() error {
		tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bsp), sdktrace.WithResource(res))
		return nil
	})
	if err != nil {
		return nil, errors.Join(err, tp.Shutdown(ctx))
	}
	return tp, nil
}

// The variables each piece of the SDK reads, by prefix.
var (
	resourceVars = []string{"OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME"}
	exporterVars = []string{"OTEL_EXPORTER_OTLP_"}
	batchVars    = []string{"OTEL_BSP_"}
	providerVars = []string{"OTEL_TRACES_SAMPLER", "OTEL_SPAN_", "OTEL_ATTRIBUTE_", "OTEL_EVENT_", "OTEL_LINK_"}
)

// checkEnv refuses the values the SDK takes without a word but would not
// honour: an endpoint that is not an http(s) URL (a bare host:port is read
// as a URL scheme), a protocol other than the two OTLP/HTTP ones (it falls
// back to http/protobuf), a compression other than gzip or none (it sends
// uncompressed), and a negative batch size (its batch span processor
// panics).
func checkEnv(getenv func(string) string) error {
	var errs []error
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		if v := getenv(name); v != "" {
			if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("tracing: %s=%q: want an http:// or https:// URL", name, v))
			}
		}
	}
	for _, c := range []struct {
		suffix string
		values []string
		why    string
	}{
		{"PROTOCOL", []string{"http/protobuf", "http/json"}, " (this server exports over OTLP/HTTP)"},
		{"COMPRESSION", []string{"gzip", "none"}, ""},
	} {
		for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_" + c.suffix, "OTEL_EXPORTER_OTLP_" + c.suffix} {
			if v := getenv(name); v != "" && !slices.Contains(c.values, v) {
				errs = append(errs, fmt.Errorf("tracing: %s=%s: want %s%s", name, v, strings.Join(c.values, " or "), c.why))
			}
		}
	}
	for _, name := range []string{"OTEL_BSP_MAX_QUEUE_SIZE", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
		if n, err := strconv.Atoi(getenv(name)); err == nil && n < 0 {
			errs = append(errs, fmt.Errorf("tracing: %s=%d: want a non-negative number", name, n))
		}
	}
	return errors.Join(errs...)
}
