package httpapi

import (
	"time"

	"github.com/labstack/echo/v4"

	"agentserver/internal/metrics"
)

// observe records every request in the metrics, by method, route template
// and status. It wraps the access log, which writes error responses, so the
// status it sees is final.
func observe() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			metrics.HTTPRequest(c.Request().Method, routeTemplate(c), c.Response().Status, time.Since(start))
			return err
		}
	}
}

// serveMetrics adds GET /metrics (Prometheus text) to e.
func serveMetrics(e *echo.Echo) {
	e.GET("/metrics", echo.WrapHandler(metrics.Handler()))
}
