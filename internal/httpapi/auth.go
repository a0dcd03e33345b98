package httpapi

import (
	"crypto/subtle"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"agentserver/internal/authz"
	"agentserver/internal/console"
	"agentserver/internal/errdefs"
)

// Auth configures who may call the server.
type Auth struct {
	// APIKey, when set, is accepted as x-api-key: its holder is the
	// operator, who sees everything.
	APIKey string
	// Authenticators recognise other credentials (JWT bearer tokens).
	Authenticators []authz.Authenticator
	// Authorizer decides for the users the Authenticators return.
	Authorizer authz.Authorizer
}

func (a Auth) enabled() bool { return a.APIKey != "" || len(a.Authenticators) > 0 }

// authenticate establishes the caller of every routed request (the API
// key, else an Authenticator), refuses a route the route table does not
// list or the caller may not use, and puts the caller in the request's
// context for the services to authorise against (authz.Authorize).
func authenticate(a Auth, routes routeIndex, cu **custom) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if !a.enabled() || r.Method == http.MethodOptions || console.Public(r) {
				return next(c)
			}
			acc, listed := routes.lookup(r.Method, c.Path())
			if !listed && (*cu).owns(c) {
				// The custom routes' entries: see custom.access.
				acc, listed = (*cu).access(r.Method, r.URL.Path), true
			}
			if listed && acc.Public {
				return next(c)
			}
			user, err := a.identify(r)
			if err != nil {
				return err
			}
			if err := a.admit(user, acc, listed, c); err != nil {
				return err
			}
			caller := authz.Caller{User: user, Authorizer: a.Authorizer}
			if !user.Operator {
				caller.Credentials = http.Header{"Authorization": r.Header.Values("Authorization")}
			}
			c.SetRequest(r.WithContext(authz.WithCaller(r.Context(), caller)))
			return next(c)
		}
	}
}

// identify returns the caller of r: the operator for the API key, else the
// first Authenticator's user. An x-api-key that is not the server's may
// still be a user's key that an Authenticator (a JS Auth module) knows.
func (a Auth) identify(r *http.Request) (*authz.User, error) {
	badKey := false
	if key := r.Header.Get("x-api-key"); key != "" && a.APIKey != "" {
		if subtle.ConstantTimeCompare([]byte(key), []byte(a.APIKey)) == 1 {
			return &authz.User{Identity: "operator", Operator: true}, nil
		}
		badKey = true
	}
	for _, au := range a.Authenticators {
		u, err := au.Authenticate(r)
		if err != nil {
			return nil, err
		}
		if u != nil {
			return u, nil
		}
	}
	if len(a.Authenticators) == 0 || badKey {
		return nil, errUnauthorized
	}
	return nil, fmt.Errorf("missing credentials: send Authorization: Bearer <token>: %w", errdefs.ErrUnauthorized)
}

// errRouteClosed refuses a route the caller may not use; it says no more.
var errRouteClosed = fmt.Errorf("not allowed: %w", errdefs.ErrForbidden)

// admit checks the route's access for user. A routed path without an
// entry is refused (the route table fails closed); an unrouted one goes on
// to its 404 or 405.
func (a Auth) admit(user *authz.User, acc access, listed bool, c echo.Context) error {
	if user.Operator {
		return nil
	}
	if !listed {
		if c.Path() != "" && c.Handler() != nil && routed(c) {
			return errRouteClosed
		}
		return nil
	}
	if acc.Operator {
		return errRouteClosed
	}
	return nil
}

// routed reports whether the request matched a registered route (echo
// gives unmatched requests its not-found or method-not-allowed handler).
func routed(c echo.Context) bool {
	for _, rt := range c.Echo().Routes() {
		if rt.Path == c.Path() && (rt.Method == c.Request().Method || rt.Method == echo.RouteNotFound) {
			return true
		}
	}
	return false
}

var errUnauthorized = &unauthorizedError{}

type unauthorizedError struct{}

func (*unauthorizedError) Error() string { return "missing or invalid x-api-key" }
func (*unauthorizedError) Unwrap() error { return errdefs.ErrUnauthorized }
