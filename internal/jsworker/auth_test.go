package jsworker_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentserver/internal/authz"
	"agentserver/internal/config"
	"agentserver/internal/errdefs"
	"agentserver/internal/jsworker"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/stats"
)

// authFixture returns the fixture project and its langgraph.json with the
// JS Auth module and the Hono app (langgraph.auth.json); it skips when
// hono is not installed there either.
func authFixture(t testing.TB) (dir, file string) {
	t.Helper()
	dir, _ = fixture(t)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "hono")); err != nil {
		t.Skipf("%s/node_modules lacks hono: run `npm ci --no-audit --no-fund` there to run this test", dir)
	}
	return dir, filepath.Join(dir, "langgraph.auth.json")
}

// startAuthPool starts a worker pool with the fixture's Auth module and
// nothing else, as the server does for a project with auth.path.
func startAuthPool(t testing.TB) *jsworker.Pool {
	t.Helper()
	dir, _ := authFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := jsworker.Start(ctx, jsworker.Options{ProjectDir: dir, CacheDir: t.TempDir(), Log: slog.New(slog.DiscardHandler),
		Auth: &jsworker.Entry{Path: filepath.Join(dir, "src", "auth.ts"), Export: "auth"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return p
}

func bearer(token string) *http.Request {
	r := httptest.NewRequest("GET", "http://127.0.0.1/threads/search", nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

// TestJSAuthAuthenticate checks the module's authenticate through the
// worker: a user with its custom fields, HTTPExceptions as 401 and 403
// with their messages.
func TestJSAuthAuthenticate(t *testing.T) {
	a := startAuthPool(t).Auth(nil)
	if a == nil || !a.HasAuthenticate() || !a.HasHandlers() {
		t.Fatalf("auth = %+v", a)
	}
	u, err := a.Authenticate(bearer("token-alice"))
	if err != nil || u.Identity != "alice" || u.Fields["org"] != "acme" || !u.HasPermission("threads:write") {
		t.Fatalf("alice = %+v, %v", u, err)
	}
	for token, want := range map[string]struct {
		kind error
		msg  string
	}{
		"token-mallory": {errdefs.ErrForbidden, "Account suspended"},
		"nobody":        {errdefs.ErrUnauthorized, "Invalid token"},
		"":              {errdefs.ErrUnauthorized, "Invalid token"},
	} {
		_, err := a.Authenticate(bearer(token))
		if !errors.Is(err, want.kind) || err.Error() != want.msg {
			t.Errorf("token %q: %v, want %v %q", token, err, want.kind, want.msg)
		}
	}
}

// TestJSAuthAuthorize checks the module's on(...) handlers through the
// worker: the most specific one runs, false denies, filters come back in
// LangGraph's form, owner fields are written into the value's metadata
// and a store handler rewrites the namespace.
func TestJSAuthAuthorize(t *testing.T) {
	a := startAuthPool(t).Auth(nil)
	ctx := t.Context()
	alice, err := a.Authenticate(bearer("token-alice"))
	if err != nil {
		t.Fatal(err)
	}
	carol, err := a.Authenticate(bearer("token-carol"))
	if err != nil {
		t.Fatal(err)
	}

	value := map[string]any{"thread_id": "t1", "metadata": map[string]any{"owner": "bob", "topic": "x"}}
	f, err := a.Authorize(ctx, authz.Request{User: alice, Resource: authz.Threads, Action: authz.Create, Value: value})
	if err != nil {
		t.Fatal(err)
	}
	md := value["metadata"].(map[string]any)
	if md["owner"] != "alice" || md["org"] != "acme" || md["topic"] != "x" || value["thread_id"] != "t1" {
		t.Errorf("threads:create value = %v", value)
	}
	if f["owner"] != "alice" || !f.Matches(md) {
		t.Errorf("threads:create filter = %v", f)
	}

	_, err = a.Authorize(ctx, authz.Request{User: carol, Resource: authz.Threads, Action: authz.Create, Value: map[string]any{}})
	if !errors.Is(err, errdefs.ErrForbidden) {
		t.Errorf("carol's threads:create: %v, want forbidden", err)
	}

	// threads:read has a handler of its own ($contains), threads:update
	// falls back to "*" (equality), threads:search uses $eq.
	for action, want := range map[string]map[string]any{
		authz.Read:   {"readers": []any{"alice"}},
		authz.Update: {"owner": "alice"},
		authz.Search: {"owner": "alice"},
	} {
		f, err := a.Authorize(ctx, authz.Request{User: alice, Resource: authz.Threads, Action: action, Value: map[string]any{"thread_id": "t1"}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := f.Containment()
		if err != nil || len(c) != 1 {
			t.Fatalf("threads:%s filter %v: %v", action, f, err)
		}
		for k, v := range want {
			if got, ok := c[k]; !ok || !equalJSON(got, v) {
				t.Errorf("threads:%s containment = %v, want %v", action, c, want)
			}
		}
	}
	if f, _ := a.Authorize(ctx, authz.Request{User: alice, Resource: authz.Threads, Action: authz.Read}); f.Matches(map[string]any{"readers": []any{"bob"}}) {
		t.Error("alice's read filter matches a thread only bob reads")
	}

	store := map[string]any{"namespace": []any{"memories"}, "key": "k"}
	f, err = a.Authorize(ctx, authz.Request{User: alice, Resource: authz.Store, Action: authz.Put, Value: store})
	if err != nil || f != nil {
		t.Fatalf("store:put: %v %v", f, err)
	}
	if ns := store["namespace"].([]any); len(ns) != 2 || ns[0] != "alice" || ns[1] != "memories" {
		t.Errorf("store namespace = %v, want [alice memories]", store["namespace"])
	}
}

func equalJSON(a, b any) bool {
	la, okA := a.([]any)
	lb, okB := b.([]any)
	if okA && okB {
		if len(la) != len(lb) {
			return false
		}
		for i := range la {
			if la[i] != lb[i] {
				return false
			}
		}
		return true
	}
	return a == b
}

// TestJSAuthCache checks auth.cache: a user is remembered by the cache
// headers' values, a failure is not, and an expired entry is asked again.
func TestJSAuthCache(t *testing.T) {
	p := startAuthPool(t)
	a := p.Auth(&jsworker.AuthCache{Keys: []string{"Authorization"}, TTL: time.Hour, MaxSize: 1})
	first, err := a.Authenticate(bearer("token-alice"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.Authenticate(bearer("token-alice"))
	if err != nil || again != first {
		t.Errorf("a cached user is the same user: %p %p %v", first, again, err)
	}
	// max_size 1: bob's entry pushes alice's out.
	if _, err := a.Authenticate(bearer("token-bob")); err != nil {
		t.Fatal(err)
	}
	third, err := a.Authenticate(bearer("token-alice"))
	if err != nil || third == first {
		t.Errorf("alice was evicted, so she is authenticated anew: %p %p %v", first, third, err)
	}
	uncached := p.Auth(nil)
	x, _ := uncached.Authenticate(bearer("token-alice"))
	y, _ := uncached.Authenticate(bearer("token-alice"))
	if x == y {
		t.Error("without auth.cache every request is authenticated anew")
	}
}

// TestJSAuthLoadErrors checks that a bad auth.path or http.app stops the
// start with one line naming the key, the file and the cause.
func TestJSAuthLoadErrors(t *testing.T) {
	dir, _ := authFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := jsworker.Start(ctx, jsworker.Options{ProjectDir: dir, CacheDir: t.TempDir(), Log: slog.New(slog.DiscardHandler),
		Auth:    &jsworker.Entry{Path: filepath.Join(dir, "src", "app.ts"), Export: "app"},
		HTTPApp: &jsworker.Entry{Path: filepath.Join(dir, "src", "auth.ts"), Export: "nope"}})
	if !errors.Is(err, jsworker.ErrLoad) {
		t.Fatalf("start: %v", err)
	}
	for _, want := range []string{
		"auth.path (" + filepath.Join(dir, "src", "app.ts") + `): export "app" of`,
		"is not an Auth instance of @langchain/langgraph-sdk/auth",
		"http.app (" + filepath.Join(dir, "src", "auth.ts") + `): ` + filepath.Join(dir, "src", "auth.ts") + ` has no export named "nope"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestJSAuthTwoUsersThroughSDK serves the fixture with its JS Auth module
// and Hono app and runs tests/jsgraphs/sdk/tenants.test.mjs (the real JS
// SDK, two users) against it; with AGENTSERVER_TEST_DATABASE_URL set it
// runs on PostgreSQL.
func TestJSAuthTwoUsersThroughSDK(t *testing.T) {
	dir, file := authFixture(t)
	s := testutil.StartServer(t, testutil.Options{GraphsFile: file})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "sdk", "tenants.test.mjs"))
	cmd.Dir = dir
	env := []string{"LANGGRAPH_API_URL=" + s.URL()}
	for _, kv := range os.Environ() {
		// The SDK would send a key from these as x-api-key.
		if !strings.HasPrefix(kv, "LANGGRAPH_API_KEY=") && !strings.HasPrefix(kv, "LANGSMITH_API_KEY=") && !strings.HasPrefix(kv, "LANGCHAIN_API_KEY=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node tenants.test.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "# fail 0") || strings.Contains(string(out), "# pass 0") {
		t.Fatalf("the SDK suite did not pass:\n%s", out)
	}
	t.Logf("%s", out)
}

// BenchmarkJSAuthorize measures one call of a JS Auth handler through the
// worker (threads:read: a handler with a filter), the cost a JS Auth
// module adds to a request per authorisation; p50-ms is the figure
// docs/benchmarks.md reports.
func BenchmarkJSAuthorize(b *testing.B) {
	a := startAuthPool(b).Auth(nil)
	user, err := a.Authenticate(bearer("token-alice"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		f, err := a.Authorize(ctx, authz.Request{User: user, Resource: authz.Threads, Action: authz.Read, Value: map[string]any{"thread_id": "t1"}})
		lat = append(lat, time.Since(start))
		if err != nil || f == nil {
			b.Fatal(f, err)
		}
	}
	b.StopTimer()
	stats.ReportLatencies(b, lat)
}

// BenchmarkJSAuthenticate measures the module's authenticate through the
// worker, uncached (every request) and cached (auth.cache).
func BenchmarkJSAuthenticate(b *testing.B) {
	p := startAuthPool(b)
	for _, bc := range []struct {
		name  string
		cache *jsworker.AuthCache
	}{{"uncached", nil}, {"cached", &jsworker.AuthCache{}}} {
		b.Run(bc.name, func(b *testing.B) {
			a := p.Auth(bc.cache)
			r := bearer("token-alice")
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				u, err := a.Authenticate(r)
				lat = append(lat, time.Since(start))
				if err != nil || u.Identity != "alice" {
					b.Fatal(u, err)
				}
			}
			b.StopTimer()
			stats.ReportLatencies(b, lat)
		})
	}
}

// BenchmarkJSAuthRequest measures whole requests through the HTTP stack of
// a server running the fixture's Auth module (auth.cache on, as in
// langgraph.auth.json): reading a thread as the operator (the API key: no
// module call), as a user of the module (authenticate answered by the
// cache, then the threads:read handler in the worker), and a custom route
// of the Hono app served by the worker (and, for comparison, by Node's own
// HTTP server on loopback).
func BenchmarkJSAuthRequest(b *testing.B) {
	dir, file := authFixture(b)
	s := testutil.StartServer(b, testutil.Options{GraphsFile: file, APIKey: "operator-key"})
	loopback := testutil.StartNodeScript(b, dir, filepath.Join("bench", "hono-http.mjs"), nil)
	create, _ := http.NewRequest("POST", s.URL()+"/threads", strings.NewReader(`{}`))
	create.Header.Set("Authorization", "Bearer token-alice")
	create.Header.Set("Content-Type", "application/json")
	res, err := s.Client.Do(create)
	if err != nil || res.StatusCode != 200 {
		b.Fatal(res, err)
	}
	var thread struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&thread); err != nil {
		b.Fatal(err)
	}
	res.Body.Close()
	for _, bc := range []struct {
		name, base, path, header, value string
	}{
		{"api-key", s.URL(), "/threads/" + thread.ThreadID, "x-api-key", "operator-key"},
		{"js-auth", s.URL(), "/threads/" + thread.ThreadID, "Authorization", "Bearer token-alice"},
		{"custom-route", s.URL(), "/hello", "Authorization", "Bearer token-alice"},
		// The same route of the same app, straight from Node's HTTP server
		// on loopback (no server, no auth): the hop a loopback transport
		// would add instead of the worker protocol's.
		{"hono-loopback", loopback, "/hello", "Authorization", "Bearer token-alice"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequest("GET", bc.base+bc.path, nil)
				req.Header.Set(bc.header, bc.value)
				start := time.Now()
				res, err := s.Client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lat = append(lat, time.Since(start))
				if err != nil || res.StatusCode != 200 {
					b.Fatal(res.Status, err)
				}
			}
			b.StopTimer()
			stats.ReportLatencies(b, lat)
		})
	}
}

// variant writes a langgraph.json beside the fixture's (so that its
// relative paths and node_modules resolve) with sections changed, and
// returns its path.
func variant(t *testing.T, change func(map[string]any)) string {
	t.Helper()
	dir, file := authFixture(t)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	change(doc)
	f, err := os.CreateTemp(dir, ".langgraph-test-*.json")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(f.Name()) })
	if err := json.NewEncoder(f).Encode(doc); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return f.Name()
}

// TestJSAuthStudioKeyAndCustomRouteOptions checks disable_studio_auth (the
// API key skips the module unless it is set), http.enable_custom_route_auth
// off (custom routes public) and the body limit on custom routes.
func TestJSAuthStudioKeyAndCustomRouteOptions(t *testing.T) {
	alice := http.Header{"Authorization": {"Bearer token-alice"}}
	operator := http.Header{"X-Api-Key": {"opkey"}}

	s := testutil.StartServer(t, testutil.Options{GraphsFile: variant(t, func(map[string]any) {}), APIKey: "opkey",
		Configure: func(c *config.Config) { c.MaxBodyBytes = 1 << 10 }})
	created := s.DoWith("POST", "/threads", map[string]any{}, alice)
	if created.Status != 200 {
		t.Fatalf("alice creates a thread: %d %s", created.Status, created.Raw)
	}
	id := created.Object(t)["thread_id"].(string)
	if owner := created.Object(t)["metadata"].(map[string]any)["owner"]; owner != "alice" {
		t.Fatalf("thread owner = %v, want alice", owner)
	}
	if r := s.DoWith("GET", "/threads/"+id, nil, operator); r.Status != 200 {
		t.Errorf("the API key (the studio's) skips the module and sees alice's thread: %d %s", r.Status, r.Raw)
	}
	if r := s.DoWith("POST", "/threads/search", map[string]any{}, http.Header{"X-Api-Key": {"token-bob"}}); r.Status != 200 || len(r.List(t)) != 0 {
		t.Errorf("a user's own x-api-key (not the server's) goes to the module: %d %s", r.Status, r.Raw)
	}
	big := map[string]any{"pad": strings.Repeat("x", 2<<10)}
	if r := s.DoWith("POST", "/echo/x", big, alice); r.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("a custom route's body over the limit: %d %s", r.Status, r.Raw)
	}
	if r := s.DoWith("GET", "/hello", nil, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("a custom route without credentials: %d %s", r.Status, r.Raw)
	}
	s.Shutdown(t.Context())

	s = testutil.StartServer(t, testutil.Options{APIKey: "opkey", GraphsFile: variant(t, func(doc map[string]any) {
		doc["auth"].(map[string]any)["disable_studio_auth"] = true
		doc["http"].(map[string]any)["enable_custom_route_auth"] = false
		delete(doc["http"].(map[string]any), "public_routes")
	})})
	if r := s.DoWith("POST", "/threads/search", map[string]any{}, operator); r.Status != http.StatusUnauthorized || r.Object(t)["detail"] != "Invalid token" {
		t.Errorf("with disable_studio_auth the module judges the API key too: %d %s", r.Status, r.Raw)
	}
	if r := s.DoWith("GET", "/hello", nil, nil); r.Status != 200 || r.Object(t)["user"] != nil {
		t.Errorf("enable_custom_route_auth off: /hello without credentials: %d %s", r.Status, r.Raw)
	}
}
