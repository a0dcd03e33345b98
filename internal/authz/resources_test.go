package authz_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"agentserver/internal/testutil"
)

// names returns the sorted values of field in a list of objects.
func names(t *testing.T, r testutil.Response, field string) []string {
	t.Helper()
	var out []string
	for _, v := range r.List(t) {
		out = append(out, fmt.Sprint(v.(map[string]any)[field]))
	}
	sort.Strings(out)
	return out
}

func TestOwnerScopedAssistants(t *testing.T) {
	u := startTenants(t)
	systemCount := len(u.op.Must(200, "POST", "/assistants/search", map[string]any{"limit": 100}).List(t))
	a := u.alice.Must(200, "POST", "/assistants", map[string]any{"graph_id": "echo", "name": "mine", "metadata": map[string]any{"owner": "bob", "k": "v"}}).Object(t)
	id := a["assistant_id"].(string)
	if md := a["metadata"].(map[string]any); md["owner"] != "alice" || md["k"] != "v" {
		t.Fatalf("metadata = %v, want owner alice", md)
	}
	missing := uuid.NewString()
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/assistants/%s", nil},
		{"PATCH", "/assistants/%s", map[string]any{"name": "taken"}},
		{"DELETE", "/assistants/%s", nil},
		{"GET", "/assistants/%s/graph", nil},
		{"GET", "/assistants/%s/schemas", nil},
		{"GET", "/assistants/%s/subgraphs", nil},
		{"POST", "/assistants/%s/versions", map[string]any{}},
		{"POST", "/assistants/%s/latest", map[string]any{"version": 1}},
	} {
		r := u.bob.Do(c.method, fmt.Sprintf(c.path, id), c.body)
		m := u.bob.Do(c.method, fmt.Sprintf(c.path, missing), c.body)
		notFoundLikeMissing(t, c.method+" "+c.path, r, m, id, missing)
	}
	// GHSA-jfj5: creating a run checks assistants:read.
	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	th := u.bob.Must(200, "POST", "/threads", map[string]any{}).Object(t)["thread_id"].(string)
	for _, path := range []string{"/threads/" + th + "/runs", "/threads/" + th + "/runs/wait", "/runs/wait", "/runs"} {
		if r := u.bob.Do("POST", path, map[string]any{"assistant_id": id, "input": input}); r.Status != 404 {
			t.Errorf("bob running alice's assistant at %s: %d %s", path, r.Status, r.Raw)
		}
	}
	u.alice.Must(200, "POST", "/runs/wait", map[string]any{"assistant_id": id, "input": input})
	// Taking alice's id with if_exists do_nothing is a conflict, not her assistant.
	if r := u.bob.Do("POST", "/assistants", map[string]any{"graph_id": "echo", "assistant_id": id, "if_exists": "do_nothing"}); r.Status != http.StatusConflict {
		t.Errorf("bob creating alice's assistant id with do_nothing: %d %s", r.Status, r.Raw)
	}
	// Search and count: one's own plus the shared system assistants.
	for _, c := range []struct {
		who  *testutil.Server
		want int
	}{{u.alice, systemCount + 1}, {u.bob, systemCount}, {u.op, systemCount + 1}} {
		r := c.who.Must(200, "POST", "/assistants/search", map[string]any{"limit": 100})
		if n := len(r.List(t)); n != c.want {
			t.Errorf("assistants search: %d, want %d", n, c.want)
		}
		if n := c.who.Must(200, "POST", "/assistants/count", map[string]any{}).JSON; n != float64(c.want) {
			t.Errorf("assistants count = %v, want %d", n, c.want)
		}
		if n := len(c.who.Must(200, "POST", "/agents/search", map[string]any{"limit": 100}).List(t)); n != c.want {
			t.Errorf("agents search: %d, want %d", n, c.want)
		}
	}
	if r := u.bob.Must(200, "POST", "/assistants/search", map[string]any{"metadata": map[string]any{"owner": "alice"}}); len(r.List(t)) != 0 {
		t.Errorf("bob searching owner=alice: %s", r.Raw)
	}
	// The system assistants are shared for reading, and only the operator
	// changes them.
	u.bob.Must(200, "GET", "/assistants/echo", nil)
	for _, c := range []struct {
		method, path string
		body         any
	}{{"PATCH", "/assistants/echo", map[string]any{"name": "mine now"}}, {"DELETE", "/assistants/echo", nil}, {"POST", "/assistants/echo/latest", map[string]any{"version": 1}}} {
		if r := u.bob.Do(c.method, c.path, c.body); r.Status != http.StatusForbidden {
			t.Errorf("bob %s %s: %d %s, want 403", c.method, c.path, r.Status, r.Raw)
		}
	}
	// A patch cannot give an assistant away.
	if r := u.alice.Do("PATCH", "/assistants/"+id, map[string]any{"metadata": map[string]any{"owner": "bob"}}); r.Status != http.StatusForbidden {
		t.Errorf("alice giving her assistant to bob: %d %s", r.Status, r.Raw)
	}
	u.alice.Must(200, "PATCH", "/assistants/"+id, map[string]any{"name": "renamed"})
	if got := u.alice.Must(200, "GET", "/assistants/"+id, nil).Object(t); got["name"] != "renamed" || got["metadata"].(map[string]any)["owner"] != "alice" {
		t.Errorf("after the patch: %v", got)
	}
	u.alice.Must(200, "DELETE", "/assistants/"+id, nil)
}

// startTenantsAt is startTenants with the cron scheduler's clock.
func startTenantsAt(t *testing.T, clock func() time.Time) (tenants, *testutil.Server) {
	t.Helper()
	j := testutil.NewJWKS(t)
	graphs := testutil.WithSection(t, testutil.TestGraphs, "auth", j.AuthSection(map[string]any{"owner_scoped": true}))
	s := testutil.StartServer(t, testutil.Options{Graphs: graphs, APIKey: "opkey", CronClock: clock})
	return tenants{
		alice: s.As(testutil.Bearer(j.Token(t, "alice", nil, map[string]any{"team": "red"}))),
		bob:   s.As(testutil.Bearer(j.Token(t, "bob", nil, nil))),
		op:    s.As(http.Header{"X-Api-Key": {"opkey"}}),
	}, s
}

func TestOwnerScopedCrons(t *testing.T) {
	now := time.Now().UTC()
	var shift atomic.Int64
	u, s := startTenantsAt(t, func() time.Time { return now.Add(time.Duration(shift.Load())) })
	th := u.alice.Must(200, "POST", "/threads", map[string]any{}).Object(t)["thread_id"].(string)
	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "tick"}}}
	onThread := u.alice.Must(200, "POST", "/threads/"+th+"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 * * * *", "input": input}).Object(t)
	stateless := u.alice.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 * * * *", "input": input, "metadata": map[string]any{"owner": "bob"}, "on_run_completed": "keep"}).Object(t)
	if md := stateless["metadata"].(map[string]any); md["owner"] != "alice" {
		t.Fatalf("cron metadata = %v, want owner alice", md)
	}
	id := onThread["cron_id"].(string)
	missing := uuid.NewString()
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/runs/crons/%s", nil},
		{"PATCH", "/runs/crons/%s", map[string]any{"schedule": "5 * * * *"}},
		{"DELETE", "/runs/crons/%s", nil},
	} {
		r := u.bob.Do(c.method, fmt.Sprintf(c.path, id), c.body)
		m := u.bob.Do(c.method, fmt.Sprintf(c.path, missing), c.body)
		notFoundLikeMissing(t, c.method+" "+c.path, r, m, id, missing)
	}
	// A cron on another user's thread, or of another user's assistant, is
	// refused as a missing one.
	if r := u.bob.Do("POST", "/threads/"+th+"/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 * * * *"}); r.Status != 404 {
		t.Errorf("bob's cron on alice's thread: %d %s", r.Status, r.Raw)
	}
	asst := u.alice.Must(200, "POST", "/assistants", map[string]any{"graph_id": "echo"}).Object(t)["assistant_id"].(string)
	if r := u.bob.Do("POST", "/runs/crons", map[string]any{"assistant_id": asst, "schedule": "0 * * * *"}); r.Status != 404 {
		t.Errorf("bob's cron of alice's assistant: %d %s", r.Status, r.Raw)
	}
	u.bob.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 * * * *", "input": input, "on_run_completed": "keep"})
	for _, c := range []struct {
		who  *testutil.Server
		want int
	}{{u.alice, 2}, {u.bob, 1}, {u.op, 3}} {
		if n := len(c.who.Must(200, "POST", "/runs/crons/search", map[string]any{}).List(t)); n != c.want {
			t.Errorf("crons search: %d, want %d", n, c.want)
		}
		if n := c.who.Must(200, "POST", "/runs/crons/count", map[string]any{}).JSON; n != float64(c.want) {
			t.Errorf("crons count = %v, want %d", n, c.want)
		}
	}
	// Firings run as the cron's creator: alice's runs are hers (her
	// stateless firing's thread too), bob's are his.
	shift.Store(int64(2 * time.Hour))
	if _, err := s.Crons.FireDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		who  *testutil.Server
		name string
		want int
	}{{u.alice, "alice", 2}, {u.bob, "bob", 1}} {
		// The scheduler's own goroutine may have claimed a firing whose
		// run it is still storing when FireDue returns.
		var runs []any
		testutil.Eventually(t, 10*time.Second, c.name+"'s cron runs", func() bool {
			runs = c.who.Must(200, "POST", "/runs/search", map[string]any{"limit": 100}).List(t)
			return len(runs) == c.want
		})
		for _, r := range runs {
			run := r.(map[string]any)
			if run["metadata"].(map[string]any)["owner"] != c.name {
				t.Errorf("%s's cron run metadata = %v", c.name, run["metadata"])
			}
			user := run["kwargs"].(map[string]any)["config"].(map[string]any)["configurable"].(map[string]any)["langgraph_auth_user"].(map[string]any)
			if user["identity"] != c.name {
				t.Errorf("%s's cron run acts for %v", c.name, user)
			}
			// The thread of a stateless firing is the creator's too.
			tid := run["thread_id"].(string)
			if md := c.who.Must(200, "GET", "/threads/"+tid, nil).Object(t)["metadata"].(map[string]any); md["owner"] != c.name {
				t.Errorf("%s's cron run's thread metadata = %v", c.name, md)
			}
		}
	}
}

func TestOwnerScopedStore(t *testing.T) {
	u := startTenants(t)
	put := func(c *testutil.Server, ns []string, key string, v map[string]any) {
		t.Helper()
		c.Must(204, "PUT", "/store/items", map[string]any{"namespace": ns, "key": key, "value": v})
	}
	put(u.alice, []string{"notes"}, "k", map[string]any{"who": "alice"})
	put(u.bob, []string{"notes"}, "k", map[string]any{"who": "bob"})
	get := func(c *testutil.Server, ns, key string) testutil.Response {
		return c.Do("GET", "/store/items?namespace="+ns+"&key="+key, nil)
	}
	for _, c := range []struct {
		who  *testutil.Server
		name string
	}{{u.alice, "alice"}, {u.bob, "bob"}} {
		r := get(c.who, "notes", "k")
		if r.Status != 200 || r.Object(t)["value"].(map[string]any)["who"] != c.name {
			t.Errorf("%s gets notes/k: %d %s", c.name, r.Status, r.Raw)
		}
		// The namespaces a user sees carry their identity, and work as sent back.
		items := c.who.Must(200, "POST", "/store/items/search", map[string]any{}).Object(t)["items"].([]any)
		if len(items) != 1 || fmt.Sprint(items[0].(map[string]any)["namespace"]) != "["+c.name+" notes]" {
			t.Errorf("%s searches: %v", c.name, items)
		}
		if r := get(c.who, c.name+".notes", "k"); r.Status != 200 {
			t.Errorf("%s gets the namespace search returned: %d %s", c.name, r.Status, r.Raw)
		}
		nss := c.who.Must(200, "POST", "/store/namespaces", map[string]any{}).Object(t)["namespaces"]
		if fmt.Sprint(nss) != "[["+c.name+" notes]]" {
			t.Errorf("%s lists namespaces %v", c.name, nss)
		}
	}
	// bob aiming at alice's namespace stays in his own.
	if r := get(u.bob, "alice.notes", "k"); r.JSON != nil {
		t.Errorf("bob gets alice.notes/k: %d %s", r.Status, r.Raw)
	}
	if items := u.bob.Must(200, "POST", "/store/items/search", map[string]any{"namespace_prefix": []string{"alice"}}).Object(t)["items"].([]any); len(items) != 0 {
		t.Errorf("bob searches alice's prefix: %v", items)
	}
	if nss := u.bob.Must(200, "POST", "/store/namespaces", map[string]any{"prefix": []string{"alice"}}).Object(t)["namespaces"].([]any); len(nss) != 0 {
		t.Errorf("bob lists alice's namespaces: %v", nss)
	}
	u.bob.Must(204, "DELETE", "/store/items", map[string]any{"namespace": []string{"alice", "notes"}, "key": "k"})
	if r := get(u.alice, "notes", "k"); r.Status != 200 {
		t.Errorf("alice's item after bob's delete: %d %s", r.Status, r.Raw)
	}
	// The operator sees both, as stored.
	nss := u.op.Must(200, "POST", "/store/namespaces", map[string]any{}).Object(t)["namespaces"]
	if fmt.Sprint(nss) != "[[alice notes] [bob notes]]" {
		t.Errorf("operator lists %v", nss)
	}
}

// mcpTools lists the tool names of /mcp for c.
func mcpTools(t *testing.T, c *testutil.Server) string {
	t.Helper()
	r := c.DoWith("POST", "/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": map[string]any{}},
		http.Header{"Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {"2025-03-26"}})
	if r.Status != 200 {
		t.Fatalf("tools/list: %d %s", r.Status, r.Raw)
	}
	var out []string
	for _, tool := range r.Object(t)["result"].(map[string]any)["tools"].([]any) {
		out = append(out, tool.(map[string]any)["name"].(string))
	}
	return strings.Join(out, ",")
}

func TestOwnerScopedMCPAndA2A(t *testing.T) {
	u := startTenants(t)
	id := u.alice.Must(200, "POST", "/assistants", map[string]any{"graph_id": "echo", "name": "alices_helper"}).Object(t)["assistant_id"].(string)
	if tools := mcpTools(t, u.alice); !strings.Contains(tools, "alices_helper") {
		t.Errorf("alice's MCP tools lack her assistant: %s", tools)
	}
	if tools := mcpTools(t, u.bob); strings.Contains(tools, "alices_helper") || !strings.Contains(tools, "echo") {
		t.Errorf("bob's MCP tools: %s", tools)
	}
	// Agent cards: of the assistants the caller may read.
	u.alice.Must(200, "GET", "/.well-known/agent-card.json?assistant_id="+id, nil)
	u.bob.Must(200, "GET", "/.well-known/agent-card.json?assistant_id=echo", nil)
	u.bob.Must(404, "GET", "/.well-known/agent-card.json?assistant_id="+id, nil)
	u.bob.Must(404, "GET", "/a2a/"+id+"/.well-known/agent-card.json", nil)
	send := func(c *testutil.Server, assistant, method string, params map[string]any) map[string]any {
		return c.Do("POST", "/a2a/"+assistant, map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).Object(t)
	}
	msg := map[string]any{"message": map[string]any{"kind": "message", "messageId": uuid.NewString(), "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "hi"}}}}
	if out := send(u.bob, id, "message/send", msg); out["error"] == nil {
		t.Errorf("bob messaging alice's assistant: %v", out)
	}
	task := send(u.alice, "echo", "message/send", msg)["result"].(map[string]any)
	// A2A tasks are runs: bob cannot read alice's, nor continue her context.
	if out := send(u.bob, "echo", "tasks/get", map[string]any{"id": task["id"]}); out["error"] == nil {
		t.Errorf("bob reading alice's A2A task: %v", out)
	}
	cont := map[string]any{"message": map[string]any{"kind": "message", "messageId": uuid.NewString(), "role": "user", "contextId": task["contextId"], "parts": []any{map[string]any{"kind": "text", "text": "again"}}}}
	if out := send(u.bob, "echo", "message/send", cont); out["error"] == nil {
		t.Errorf("bob continuing alice's A2A context: %v", out)
	}
	if out := send(u.alice, "echo", "tasks/get", map[string]any{"id": task["id"]}); out["error"] != nil {
		t.Errorf("alice reading her A2A task: %v", out)
	}
}

func TestAuthPermissions(t *testing.T) {
	s, j := testutil.StartAuth(t, map[string]any{"owner_scoped": true, "permissions": map[string]any{
		"threads:create": []string{"threads:write"}, "store": []string{"memory"},
	}})
	writer := s.As(testutil.Bearer(j.Token(t, "alice", []string{"threads:write", "memory"}, nil)))
	reader := s.As(testutil.Bearer(j.Token(t, "bob", nil, nil)))
	writer.Must(200, "POST", "/threads", map[string]any{})
	writer.Must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"n"}, "key": "k", "value": map[string]any{}})
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/threads", map[string]any{}},
		{"PUT", "/store/items", map[string]any{"namespace": []string{"n"}, "key": "k", "value": map[string]any{}}},
		{"POST", "/store/items/search", map[string]any{}},
		{"POST", "/runs/wait", map[string]any{"assistant_id": "echo", "input": map[string]any{}, "if_not_exists": "create"}},
	} {
		r := reader.Do(c.method, c.path, c.body)
		if r.Status != http.StatusForbidden || r.Object(t)["code"] != "forbidden" || !strings.Contains(string(r.Raw), "needs permission") {
			t.Errorf("%s %s without the permission: %d %s", c.method, c.path, r.Status, r.Raw)
		}
	}
	// What needs no permission stays open.
	reader.Must(200, "POST", "/threads/search", map[string]any{})
	if n := len(reader.Must(200, "POST", "/threads/search", map[string]any{}).List(t)); n != 0 {
		t.Errorf("bob sees %d threads", n)
	}
}

func TestWebhookPolicy(t *testing.T) {
	input := map[string]any{"messages": []any{}}
	private := []string{"http://127.0.0.1:9/hook", "http://localhost:9/hook", "http://10.1.2.3/hook", "http://[::1]:9/hook", "http://169.254.169.254/latest", "http://192.168.0.1/x", "http://0.0.0.0/x", "http://[::ffff:127.0.0.1]/x"}
	// With per-user auth, private addresses are refused by default, for
	// everyone, at creation, and nothing is created.
	u := startTenants(t)
	for _, hook := range private {
		for _, who := range []*testutil.Server{u.alice, u.op} {
			r := who.Do("POST", "/runs", map[string]any{"assistant_id": "echo", "input": input, "webhook": hook})
			if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Raw), "allow_private") {
				t.Errorf("webhook %s: %d %s, want 422 naming allow_private", hook, r.Status, r.Raw)
			}
		}
		if r := u.alice.Do("POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 * * * *", "webhook": hook}); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("cron webhook %s: %d %s, want 422", hook, r.Status, r.Raw)
		}
	}
	cron := u.alice.Must(200, "POST", "/runs/crons", map[string]any{"assistant_id": "echo", "schedule": "0 * * * *"}).Object(t)["cron_id"].(string)
	if r := u.alice.Do("PATCH", "/runs/crons/"+cron, map[string]any{"webhook": "http://127.0.0.1:9/x"}); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("cron patched to a loopback webhook: %d %s, want 422", r.Status, r.Raw)
	}
	if n := len(u.op.Must(200, "POST", "/runs/search", map[string]any{}).List(t)); n != 0 {
		t.Errorf("%d runs were created with refused webhooks", n)
	}
	// The config decides either way.
	j := testutil.NewJWKS(t)
	graphs := testutil.WithSection(t, testutil.WithSection(t, testutil.TestGraphs, "auth", j.AuthSection(map[string]any{"owner_scoped": true})),
		"webhooks", map[string]any{"url": map[string]any{"allow_private": true}})
	hooks := make(chan string, 4)
	rec := httptestHook(t, hooks)
	allowed := testutil.StartServer(t, testutil.Options{Graphs: graphs}).As(testutil.Bearer(j.Token(t, "alice", nil, nil)))
	allowed.Must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "echo", "input": input, "webhook": rec})
	select {
	case got := <-hooks:
		if !strings.Contains(got, `"status":"success"`) {
			t.Errorf("webhook body %s", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the allowed webhook was not delivered")
	}
	// Without per-user auth the default keeps loopback webhooks working.
	plain := testutil.StartServer(t, testutil.Options{})
	plain.Must(200, "POST", "/runs/wait", map[string]any{"assistant_id": "echo", "input": input, "webhook": rec})
	select {
	case <-hooks:
	case <-time.After(10 * time.Second):
		t.Fatal("the loopback webhook of a server without per-user auth was not delivered")
	}
	// And refusing them there is one setting away.
	refusing := testutil.StartServer(t, testutil.Options{Graphs: testutil.WithSection(t, testutil.TestGraphs, "webhooks", map[string]any{"url": map[string]any{"allow_private": false, "require_https": true}})})
	if r := refusing.Do("POST", "/runs", map[string]any{"assistant_id": "echo", "input": input, "webhook": "https://127.0.0.1/x"}); r.Status != 422 {
		t.Errorf("allow_private false: %d %s", r.Status, r.Raw)
	}
	if r := refusing.Do("POST", "/runs", map[string]any{"assistant_id": "echo", "input": input, "webhook": "http://example.com/x"}); r.Status != 422 || !strings.Contains(string(r.Raw), "https") {
		t.Errorf("require_https: %d %s", r.Status, r.Raw)
	}
}

// httptestHook serves webhooks on 127.0.0.1, handing each body to got,
// and returns its URL.
func httptestHook(t *testing.T, got chan<- string) string {
	t.Helper()
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		select {
		case got <- string(raw):
		default:
		}
	}))
	t.Cleanup(hook.Close)
	return hook.URL + "/done"
}

// The thread-centric (v2) stream, its commands and its WebSocket answer
// another user's thread as a missing one, and change nothing of it.
func TestOwnerScopedThreadStream(t *testing.T) {
	u := startTenants(t)
	tid := u.alice.Must(200, "POST", "/threads", map[string]any{}).Object(t)["thread_id"].(string)
	input := map[string]any{"messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	u.alice.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": input})
	// alice follows her thread.
	ev := testutil.ProtocolEvents(t, u.alice, tid, map[string]any{"channels": []string{"lifecycle"}, "since": 0}, u.alice.Header)
	if _, err := ev.Next(); err != nil {
		t.Fatalf("alice's stream: %v", err)
	}
	missing := uuid.NewString()
	r := u.bob.Do("POST", "/threads/"+tid+"/stream/events", map[string]any{"channels": []string{"values"}})
	m := u.bob.Do("POST", "/threads/"+missing+"/stream/events", map[string]any{"channels": []string{"values"}})
	notFoundLikeMissing(t, "POST stream/events", r, m, tid, missing)
	for i, c := range []struct {
		method string
		params any
	}{
		{"run.start", map[string]any{"assistant_id": "echo", "input": input}},
		{"state.get", map[string]any{}},
		{"state.listCheckpoints", map[string]any{}},
		{"agent.getTree", nil},
		{"input.inject", map[string]any{"input": input}},
	} {
		body := map[string]any{"id": i + 1, "method": c.method, "params": c.params}
		r := u.bob.Do("POST", "/threads/"+tid+"/commands", body)
		if r.Status != 404 {
			t.Errorf("bob's %s on alice's thread: %d %s", c.method, r.Status, r.Raw)
		}
	}
	// The WebSocket is refused before it opens.
	url := strings.Replace(u.bob.URL(), "http://", "ws://", 1) + "/threads/" + tid + "/stream/events"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if conn, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: u.bob.Header}); err == nil {
		conn.CloseNow()
		t.Error("bob opened a WebSocket on alice's thread")
	} else if resp == nil || resp.StatusCode != 404 {
		t.Errorf("bob's WebSocket on alice's thread: %v %v", resp, err)
	}
	if n := len(u.alice.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)); n != 1 {
		t.Errorf("alice's thread has %d runs after bob's commands, want 1", n)
	}
	// Commands on a thread not made yet still work for a user.
	fresh := uuid.NewString()
	if r := u.bob.Do("POST", "/threads/"+fresh+"/commands", map[string]any{"id": 1, "method": "agent.getTree"}); r.Status != 200 {
		t.Errorf("bob's command on a new thread: %d %s", r.Status, r.Raw)
	}
}
