package jsworker

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"agentserver/internal/authz"
	"agentserver/internal/errdefs"
)

// authLoad is what the worker found in the auth module.
type authLoad struct {
	// Authenticate reports whether the module has an authenticate
	// handler.
	Authenticate bool `json:"authenticate"`
	// Handlers are the events of its on(...) handlers ("*", "threads",
	// "threads:create", "*:read", …).
	Handlers []string `json:"handlers"`
}

// AuthCache is LangGraph's auth.cache: how long the user an authenticate
// call returned is remembered, keyed by the values of some request
// headers.
type AuthCache struct {
	// Keys are the headers whose values make the cache key (default:
	// Authorization and X-Api-Key).
	Keys []string
	// TTL is how long a user is remembered (default DefaultAuthCacheTTL).
	TTL time.Duration
	// MaxSize bounds the users remembered (default
	// DefaultAuthCacheSize); the least recently used goes first.
	MaxSize int
}

// Defaults of an auth.cache section that leaves them out.
const (
	DefaultAuthCacheTTL  = time.Minute
	DefaultAuthCacheSize = 1000
)

// Auth runs the project's Auth module (@langchain/langgraph-sdk/auth) in
// the graph workers: its authenticate handler as an authz.Authenticator
// and its on(...) handlers as an authz.Authorizer.
type Auth struct {
	pool  *Pool
	cache *userCache // nil: every request is authenticated anew
}

var (
	_ authz.Authenticator = (*Auth)(nil)
	_ authz.Authorizer    = (*Auth)(nil)
)

// Auth returns the project's Auth module as it runs in the workers, nil
// when the pool loaded none. cache, when set, remembers the users its
// authenticate handler returned (LangGraph's auth.cache).
func (p *Pool) Auth(cache *AuthCache) *Auth {
	if p.authLoaded() == nil {
		return nil
	}
	a := &Auth{pool: p}
	if cache != nil {
		a.cache = newUserCache(*cache)
	}
	return a
}

// authLoaded is what the current workers found in the auth module.
func (p *Pool) authLoaded() *authLoad {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info.Auth
}

// HasAuthenticate reports whether the module has an authenticate handler:
// without one it authenticates nobody.
func (a *Auth) HasAuthenticate() bool {
	l := a.pool.authLoaded()
	return l != nil && l.Authenticate
}

// wireUser is a user as the worker answers it (LangGraph's BaseUser and
// its custom fields).
type wireUser map[string]any

// Authenticate implements authz.Authenticator: the module's authenticate
// handler gets the request (method, URL, headers; not its body) and names
// the user, or throws an HTTPException, whose status the error keeps
// (401, 403, …). Without an authenticate handler it recognises no one.
func (a *Auth) Authenticate(r *http.Request) (*authz.User, error) {
	if !a.HasAuthenticate() {
		return nil, nil
	}
	var key string
	if a.cache != nil {
		key = a.cache.key(r)
		if u := a.cache.get(key); u != nil {
			return u, nil
		}
	}
	var out struct {
		User wireUser `json:"user"`
	}
	params := map[string]any{"method": r.Method, "url": requestURL(r), "headers": headerPairs(r.Header)}
	if err := a.pool.shortCall(r.Context(), "authenticate", params, &out); err != nil {
		return nil, httpError("authenticate", err)
	}
	if out.User == nil {
		return nil, nil
	}
	u := out.User.user()
	if a.cache != nil {
		a.cache.put(key, u)
	}
	return u, nil
}

// user turns the worker's answer into an authz.User: identity,
// permissions, and the custom fields.
func (w wireUser) user() *authz.User {
	u := &authz.User{Fields: map[string]any{}}
	for k, v := range w {
		switch k {
		case "identity":
			u.Identity, _ = v.(string)
		case "permissions":
			list, _ := v.([]any)
			for _, p := range list {
				if s, ok := p.(string); ok {
					u.Permissions = append(u.Permissions, s)
				}
			}
		case "display_name", "is_authenticated":
		default:
			u.Fields[k] = v
		}
	}
	return u
}

// Authorize implements authz.Authorizer with the module's most specific
// on(...) handler for the request's resource and action (LangGraph's
// order: resource:action, resource, *:action, *). A request no handler
// covers is allowed without a round trip to a worker. What the handler
// left in its value (owner fields in metadata, a rewritten store
// namespace) replaces req.Value's contents.
func (a *Auth) Authorize(ctx context.Context, req authz.Request) (authz.Filter, error) {
	l := a.pool.authLoaded()
	if l == nil || !covers(l.Handlers, req.Resource, req.Action) {
		return nil, nil
	}
	var out struct {
		Filters map[string]any `json:"filters"`
		Value   map[string]any `json:"value"`
	}
	params := map[string]any{"resource": req.Resource, "action": req.Action, "value": req.Value, "user": req.User.AuthUser()}
	if err := a.pool.shortCall(ctx, "authorize", params, &out); err != nil {
		return nil, httpError(req.Resource+":"+req.Action, err)
	}
	if req.Value != nil {
		clear(req.Value)
		for k, v := range out.Value {
			req.Value[k] = v
		}
	}
	if out.Filters == nil {
		return nil, nil
	}
	return authz.Filter(out.Filters), nil
}

// covers reports whether one of handlers applies to resource:action.
func covers(handlers []string, resource, action string) bool {
	return slices.ContainsFunc(handlers, func(h string) bool {
		return h == "*" || h == resource || h == resource+":"+action || h == "*:"+action
	})
}

// shortCall sends a call that takes no run slot to a live worker.
func (p *Pool) shortCall(ctx context.Context, method string, params, out any) error {
	w, err := p.pick(ctx)
	if err != nil {
		return err
	}
	return w.c.call(ctx, method, params, out)
}

// statusKinds are the errdefs kinds of the statuses an HTTPException of
// the module may carry; others are server errors.
var statusKinds = map[int]error{
	http.StatusBadRequest:          errdefs.ErrInvalid,
	http.StatusUnauthorized:        errdefs.ErrUnauthorized,
	http.StatusForbidden:           errdefs.ErrForbidden,
	http.StatusNotFound:            errdefs.ErrNotFound,
	http.StatusConflict:            errdefs.ErrConflict,
	http.StatusUnprocessableEntity: errdefs.ErrInvalid,
	http.StatusTooManyRequests:     errdefs.ErrLimit,
}

// httpError turns a failed auth call into the error the client gets: an
// HTTPException's message with its status's kind; anything else (a bug in
// the module, a lost worker) is a server error whose details are logged,
// not shown.
func httpError(what string, err error) error {
	var we *WireError
	if errors.As(err, &we) {
		if kind, ok := statusKinds[we.Status]; ok {
			return &statusError{msg: we.Message, kind: kind}
		}
		return fmt.Errorf("auth module %s: %s: %s", what, we.ErrorName(), we.Message)
	}
	return fmt.Errorf("auth module %s: %w", what, err)
}

// statusError is an HTTPException of the module: its message, as the
// client reads it, of an errdefs kind.
type statusError struct {
	msg  string
	kind error
}

func (e *statusError) Error() string { return e.msg }
func (e *statusError) Unwrap() error { return e.kind }

// requestURL is r's absolute URL as the module sees it.
func requestURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.RequestURI()
}

// skippedHeaders are not handed to the module or the app: fetch's Request
// forbids them or they describe this hop only.
var skippedHeaders = map[string]bool{"Host": true, "Connection": true, "Content-Length": true, "Transfer-Encoding": true, "Keep-Alive": true, "Upgrade": true}

// headerPairs lists h as fetch's HeadersInit pairs.
func headerPairs(h http.Header) [][2]string {
	out := make([][2]string, 0, len(h))
	for k, vs := range h {
		if skippedHeaders[k] {
			continue
		}
		for _, v := range vs {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// userCache remembers authenticated users by the values of some headers,
// for a while, least recently used out first.
type userCache struct {
	keys []string
	ttl  time.Duration
	max  int
	now  func() time.Time

	mu    sync.Mutex
	order *list.List // of *cached, most recently used first
	byKey map[string]*list.Element
}

type cached struct {
	key     string
	user    *authz.User
	expires time.Time
}

func newUserCache(c AuthCache) *userCache {
	uc := &userCache{keys: c.Keys, ttl: c.TTL, max: c.MaxSize, now: time.Now, order: list.New(), byKey: map[string]*list.Element{}}
	if len(uc.keys) == 0 {
		uc.keys = []string{"Authorization", "X-Api-Key"}
	}
	if uc.ttl <= 0 {
		uc.ttl = DefaultAuthCacheTTL
	}
	if uc.max <= 0 {
		uc.max = DefaultAuthCacheSize
	}
	return uc
}

// key is the cache key of r: its values of the cache's headers ("" when
// it has none: such a request is not cached).
func (c *userCache) key(r *http.Request) string {
	var b strings.Builder
	empty := true
	for _, k := range c.keys {
		v := r.Header.Get(k)
		if v != "" {
			empty = false
		}
		b.WriteString(v)
		b.WriteByte(0)
	}
	if empty {
		return ""
	}
	return b.String()
}

func (c *userCache) get(key string) *authz.User {
	if key == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil
	}
	e := el.Value.(*cached)
	if !c.now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.byKey, key)
		return nil
	}
	c.order.MoveToFront(el)
	return e.user
}

func (c *userCache) put(key string, u *authz.User) {
	if key == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[key]; ok {
		c.order.Remove(el)
	}
	c.byKey[key] = c.order.PushFront(&cached{key: key, user: u, expires: c.now().Add(c.ttl)})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byKey, last.Value.(*cached).key)
	}
}

// HasHandlers reports whether the module has on(...) handlers.
func (a *Auth) HasHandlers() bool {
	l := a.pool.authLoaded()
	return l != nil && len(l.Handlers) > 0
}
