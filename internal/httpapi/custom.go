package httpapi

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"agentserver/internal/authz"
)

// App serves the custom routes of langgraph.json's http.app (a Hono app
// run by the graph workers).
type App interface {
	// ServeApp answers r; user is the caller as runs see it (nil: none).
	// It returns an error, having written nothing, only when the app
	// could not answer.
	ServeApp(rw http.ResponseWriter, r *http.Request, user map[string]any) error
	// AppRoutes lists the app's routes as it registered them.
	AppRoutes() []AppRoute
}

// AppRoute is one route of the custom routes' app: its method ("ALL" for
// any) and path pattern as the app wrote it ("/users/:id", "/files/*").
type AppRoute struct {
	Method, Path string
}

// CustomRoutes configure the custom routes: every request that no route
// of the server serves goes to the app (the server's routes take
// precedence), behind the same CORS, auth and body limits.
type CustomRoutes struct {
	App App
	// Auth puts the app's routes under the server's auth (else they are
	// public, as with LangGraph's enable_custom_route_auth off).
	Auth bool
	// Public are app routes served without credentials even so: "/path"
	// or "METHOD /path", the path a pattern as Hono writes them
	// ("/webhooks/:id", "/public/*").
	Public []string
}

// custom decides which requests the app serves and who may call them.
type custom struct {
	cfg CustomRoutes
	// served are the server's own routes, "METHOD path" as echo
	// registered them: a request that matched none is the app's.
	served map[string]bool
	public []AppRoute
	limit  int64
}

func newCustom(cfg *CustomRoutes, e *echo.Echo, limit int64) *custom {
	if cfg == nil || cfg.App == nil {
		return nil
	}
	c := &custom{cfg: *cfg, served: map[string]bool{}, limit: limit}
	for _, rt := range e.Routes() {
		if rt.Method != echo.RouteNotFound {
			c.served[rt.Method+" "+rt.Path] = true
		}
	}
	for _, p := range cfg.Public {
		method, path, ok := strings.Cut(p, " ")
		if !ok {
			method, path = "ALL", p
		}
		c.public = append(c.public, AppRoute{Method: method, Path: path})
	}
	return c
}

// owns reports whether the request of c is the app's: no route of the
// server matched its method and path.
func (cu *custom) owns(c echo.Context) bool {
	if cu == nil {
		return false
	}
	method := c.Request().Method
	if method == http.MethodHead && cu.served[http.MethodGet+" "+c.Path()] {
		return false // the server's GET route's, as the route table has it
	}
	return !cu.served[method+" "+c.Path()]
}

// access is the route-table entry of a request the app serves: public
// when custom routes are not under auth or a public pattern matches it,
// else any authenticated caller.
func (cu *custom) access(method, path string) access {
	if !cu.cfg.Auth {
		return public()
	}
	for _, rt := range cu.public {
		if (rt.Method == "ALL" || rt.Method == method) && matchAppPath(rt.Path, path) {
			return public()
		}
	}
	return authenticated()
}

// handle hands a request of the app to it; the server's own go on to
// next.
func (cu *custom) handle(c echo.Context, next echo.HandlerFunc) error {
	if !cu.owns(c) || c.Request().Method == http.MethodOptions {
		return next(c)
	}
	r := c.Request()
	if r.ContentLength > cu.limit {
		return answerUnread(c, bodyTooLarge(cu.limit))
	}
	r.Body = http.MaxBytesReader(c.Response(), r.Body, cu.limit)
	var user map[string]any
	if caller, ok := authz.CallerFrom(r.Context()); ok {
		user = caller.User.AuthUser()
	}
	err := cu.cfg.App.ServeApp(c.Response(), r, user)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return bodyTooLarge(cu.limit)
	}
	if err != nil {
		return echo.NewHTTPError(http.StatusBadGateway, "the custom routes' app did not answer").SetInternal(err)
	}
	return nil
}

// matchAppPath reports whether path matches a Hono route pattern: literal
// segments, ":name" (optionally with a "{regexp}", not checked here) for
// one segment, "*" for the rest (a trailing "/*" also matches the bare
// prefix, as in Hono).
func matchAppPath(pattern, path string) bool {
	if pattern == "*" || pattern == "/*" {
		return true
	}
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range ps {
		if p == "*" {
			return true
		}
		if i >= len(xs) {
			return false
		}
		if !strings.HasPrefix(p, ":") && p != xs[i] {
			return false
		}
	}
	return len(ps) == len(xs)
}
