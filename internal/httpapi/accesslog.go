package httpapi

import (
	"cmp"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// createdIDs finds the thread and run ids of a Content-Location header
// ("/threads/{thread_id}/runs/{run_id}"), which names what a request created.
var createdIDs = regexp.MustCompile(`^/threads/([0-9a-fA-F-]{36})(?:/runs/([0-9a-fA-F-]{36}))?`)

// accessLog writes one info line per request once its response is complete:
// method, route template, path, status, duration in milliseconds and, when
// known, the thread and run ids. Bodies, query strings and headers (so keys) are never logged.
func accessLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err) // writes the error response, so its status is known
			}
			attrs := []slog.Attr{
				slog.String("method", c.Request().Method),
				slog.String("route", routeTemplate(c)),
				slog.String("path", c.Request().URL.Path),
				slog.Int("status", c.Response().Status),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			}
			log.LogAttrs(c.Request().Context(), slog.LevelInfo, "request", append(attrs, requestIDs(c)...)...)
			return nil
		}
	}
}

// routeTemplate is the matched route in OpenAPI form
// ("/threads/{thread_id}/runs"), or the path kind for unmatched requests.
func routeTemplate(c echo.Context) string {
	path := c.Path()
	if path == "" || strings.HasSuffix(path, "/*") {
		return "(no route)"
	}
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	return strings.Join(parts, "/")
}

// requestIDs returns thread_id and run_id attributes from the route's
// parameters, else from the Content-Location of what the request created.
func requestIDs(c echo.Context) []slog.Attr {
	thread, run := c.Param("thread_id"), c.Param("run_id")
	if m := createdIDs.FindStringSubmatch(c.Response().Header().Get("Content-Location")); m != nil {
		thread = cmp.Or(thread, m[1])
		run = cmp.Or(run, m[2])
	}
	var out []slog.Attr
	if thread != "" {
		out = append(out, slog.String("thread_id", thread))
	}
	if run != "" {
		out = append(out, slog.String("run_id", run))
	}
	return out
}
