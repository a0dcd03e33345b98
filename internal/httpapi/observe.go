package httpapi

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.opentelemetry.io/otel/attribute"

	"agentserver/internal/metrics"
	"agentserver/internal/tracing"
)

// observe traces every request (a server span, the child of the request's
// traceparent) and records it in the metrics by method, route template and
// status. It wraps the access log, which writes error responses, so the
// status it sees is final and the log line carries the span's ids.
func observe() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			r := c.Request()
			route := routeTemplate(c)
			ctx, span := tracing.StartServer(r.Context(), r.Header, r.Method+" "+route,
				attribute.String("http.request.method", r.Method), attribute.String("http.route", route))
			c.SetRequest(r.WithContext(ctx))
			err := next(c)
			status := c.Response().Status
			attrs := [4]attribute.KeyValue{attribute.Int("http.response.status_code", status)}
			n := 1
			for _, p := range idParams {
				if v := c.Param(p.param); v != "" {
					attrs[n] = attribute.String(p.attr, v)
					n++
				}
			}
			tracing.SetAttributes(span, attrs[:n]...)
			var failed error
			if status >= http.StatusInternalServerError {
				failed = fmt.Errorf("HTTP %d", status)
			}
			tracing.End(span, failed)
			metrics.HTTPRequest(r.Method, route, status, time.Since(start))
			return err
		}
	}
}

// idParams are the path parameters a request span carries as attributes.
var idParams = [...]struct{ param, attr string }{
	{"thread_id", "langgraph.thread_id"}, {"run_id", "langgraph.run_id"}, {"assistant_id", "langgraph.assistant_id"},
}

// serveMetrics adds GET /metrics (Prometheus text) to e.
func serveMetrics(e *echo.Echo) {
	e.GET("/metrics", echo.WrapHandler(metrics.Handler()))
}
