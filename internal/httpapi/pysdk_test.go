package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"agentserver/internal/assistants"
	"agentserver/internal/testutil"
)

// pySDK sends requests the way the Python langgraph_sdk (0.3/0.4, over
// httpx) writes them: query strings built by httpx from the SDK's params
// dicts (None as an empty value, booleans as true/false, lists repeated) and
// JSON bodies as orjson encodes them (compact, in the SDK's key order). The
// query strings and bodies below are byte for byte what the SDK sends.
type pySDK struct {
	t *testing.T
	s *testutil.Server
}

// pyHeaders are the headers the SDK's httpx client adds to every request.
var pyHeaders = http.Header{"User-Agent": {"langgraph-sdk-py/0.3.0"}}

// do sends method target with body (nil: no body at all, as httpx sends
// content=None; "": the empty content of json=None).
func (p pySDK) do(method, target string, body *string) testutil.Response {
	p.t.Helper()
	var b any
	if body != nil {
		b = *body
	}
	return p.s.DoWith(method, target, b, pyHeaders)
}

// ok sends a request that must succeed and returns its decoded JSON answer
// (nil for an empty body).
func (p pySDK) ok(method, target string, body *string) any {
	p.t.Helper()
	r := p.do(method, target, body)
	if r.Status < 200 || r.Status > 299 {
		p.t.Fatalf("%s %s: %d %s", method, target, r.Status, r.Raw)
	}
	return r.JSON
}

// events sends the GET of a stream with the headers the SDK's stream() adds
// and returns the names of the events.
func (p pySDK) events(target string) []string {
	p.t.Helper()
	h := pyHeaders.Clone()
	h.Set("Cache-Control", "no-store")
	return eventNames(p.t, p.s, target, h)
}

func body(s string) *string { return &s }

func field(v any, key string) any { return v.(map[string]any)[key] }

// The requests the Python SDK sends, replayed byte for byte, succeed and
// answer what the SDK expects.
func TestPythonSDKRequests(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	py := pySDK{t, s}
	echo := assistants.SystemID("echo").String()

	// threads.create()
	tid := field(py.ok("POST", "/threads", body(`{}`)), "thread_id").(string)
	// runs.create(tid, "echo", input=..., stream_resumable=True)
	run := py.ok("POST", "/threads/"+tid+"/runs", body(`{"input":{"messages":[{"role":"user","content":"hi"}]},"stream_mode":"values","stream_subgraphs":false,"stream_resumable":true,"assistant_id":"echo"}`))
	rid := field(run, "run_id").(string)
	// runs.join(tid, rid): no params at all.
	if got := testutil.LastMessage(t, py.ok("GET", "/threads/"+tid+"/runs/"+rid+"/join", nil))["content"]; got != "echo: hi" {
		t.Fatalf("join = %v", got)
	}
	// runs.join_stream(tid, rid): stream_mode None becomes "stream_mode=".
	runPath := "/threads/" + tid + "/runs/" + rid
	if got := py.events(runPath + "/stream?cancel_on_disconnect=false&stream_mode="); len(got) != 0 {
		t.Fatalf("join_stream of a finished run = %v, want an empty stream", got)
	}
	// runs.join_stream(..., stream_mode=["values"], cancel_on_disconnect=True)
	py.events(runPath + "/stream?cancel_on_disconnect=true&stream_mode=values")
	// runs.list(tid, select=["run_id", "status"]) and with a status.
	runs := py.ok("GET", "/threads/"+tid+"/runs?limit=10&offset=0&select=run_id&select=status", nil).([]any)
	if len(runs) != 1 || len(runs[0].(map[string]any)) != 2 || field(runs[0], "status") != "success" {
		t.Fatalf("runs.list with select = %v", runs)
	}
	if runs := py.ok("GET", "/threads/"+tid+"/runs?limit=10&offset=0&status=pending", nil).([]any); len(runs) != 0 {
		t.Fatalf("runs.list status=pending = %v", runs)
	}
	// runs.cancel(tid, rid, wait=True) and wait=False (json=None: an empty body).
	if r := py.do("POST", runPath+"/cancel?wait=1&action=interrupt", nil); r.Status != 204 {
		t.Fatalf("cancel wait=1: %d %s", r.Status, r.Raw)
	}
	if r := py.do("POST", runPath+"/cancel?wait=0&action=interrupt", body("")); r.Status != 202 {
		t.Fatalf("cancel wait=0: %d %s", r.Status, r.Raw)
	}
	// runs.get(tid, rid)
	if field(py.ok("GET", runPath, nil), "status") != "success" {
		t.Fatal("cancelling a finished run changed it")
	}

	// threads.get(tid, include=["ttl"]) and threads.get_state(tid).
	py.ok("GET", "/threads/"+tid+"?include=ttl", nil)
	state := py.ok("GET", "/threads/"+tid+"/state?subgraphs=false", nil)
	cp := field(state, "checkpoint").(map[string]any)
	cpJSON, _ := json.Marshal(cp) // the SDK sends the Checkpoint dict it got
	// threads.get_state(tid, checkpoint_id=...) and (tid, checkpoint=...).
	py.ok("GET", "/threads/"+tid+"/state/"+cp["checkpoint_id"].(string)+"?subgraphs=false", nil)
	py.ok("POST", "/threads/"+tid+"/state/checkpoint", body(`{"checkpoint":`+string(cpJSON)+`,"subgraphs":false}`))
	// threads.get_history(tid, before=<Checkpoint dict>): the states before it.
	hist := py.ok("POST", "/threads/"+tid+"/history", body(`{"limit":10,"before":`+string(cpJSON)+`}`)).([]any)
	if len(hist) != 2 || field(field(hist[0], "checkpoint"), "checkpoint_id") != field(state, "parent_checkpoint").(map[string]any)["checkpoint_id"] {
		t.Fatalf("history before the newest checkpoint = %v", hist)
	}
	// threads.search(select=[...]) and threads.count().
	found := py.ok("POST", "/threads/search", body(`{"limit":10,"offset":0,"select":["thread_id","status"]}`)).([]any)
	if len(found) != 1 || len(found[0].(map[string]any)) != 2 {
		t.Fatalf("threads.search with select = %v", found)
	}
	if n := py.ok("POST", "/threads/count", body(`{}`)); n != 1.0 {
		t.Fatalf("threads.count = %v", n)
	}
	// threads.copy(tid): json=None, so an empty body.
	py.ok("POST", "/threads/"+tid+"/copy", body(""))

	// assistants.get_graph(xray=False/True/2), get_subgraphs, search with select.
	for _, q := range []string{"xray=false", "xray=true", "xray=2"} {
		py.ok("GET", "/assistants/"+echo+"/graph?"+q, nil)
	}
	py.ok("GET", "/assistants/"+echo+"/subgraphs?recurse=false", nil)
	found = py.ok("POST", "/assistants/search", body(`{"limit":10,"offset":0,"select":["assistant_id","name"]}`)).([]any)
	if len(found) == 0 || len(found[0].(map[string]any)) != 2 {
		t.Fatalf("assistants.search with select = %v", found)
	}

	// store.put_item / get_item(refresh_ttl=...) / search_items.
	py.ok("PUT", "/store/items", body(`{"namespace":["docs","u1"],"key":"k","value":{"title":"x"}}`))
	for _, q := range []string{"", "&refresh_ttl=true", "&refresh_ttl=false"} {
		if item := py.ok("GET", "/store/items?namespace=docs.u1&key=k"+q, nil); field(field(item, "value"), "title") != "x" {
			t.Fatalf("store.get_item%s = %v", q, item)
		}
	}
	// store.get_item([], key="k"): the empty namespace joins to "".
	if item := py.ok("GET", "/store/items?namespace=&key=k", nil); item != nil {
		t.Fatalf("store.get_item with no namespace = %v, want null", item)
	}
	items := py.ok("POST", "/store/items/search", body(`{"namespace_prefix":["docs"],"limit":10,"offset":0}`))
	if len(field(items, "items").([]any)) != 1 {
		t.Fatalf("store.search_items = %v", items)
	}
	// store.delete_item: httpx's own json= encoding (with spaces).
	py.ok("DELETE", "/store/items", body(`{"namespace": ["docs", "u1"], "key": "k"}`))
	if item := py.ok("GET", "/store/items?namespace=docs.u1&key=k", nil); item != nil {
		t.Fatalf("item after delete_item = %v", item)
	}
	// runs.cancel_many(status="pending"): the action in the query.
	if r := py.do("POST", "/runs/cancel?action=interrupt", body(`{"status":"pending"}`)); r.Status != 204 {
		t.Fatalf("runs.cancel_many: %d %s", r.Status, r.Raw)
	}

	// runs.wait(None, "echo"): stateless; its Location is the join route
	// of the run's temporary thread (gone once the run has ended).
	w := py.do("POST", "/runs/wait", body(`{"input":{"messages":[{"role":"user","content":"once"}]},"assistant_id":"echo"}`))
	if w.Status != 200 || testutil.LastMessage(t, w.JSON)["content"] != "echo: once" {
		t.Fatalf("stateless wait: %d %s", w.Status, w.Raw)
	}
	if loc := w.Header.Get("Location"); !strings.HasPrefix(loc, "/threads/") || !strings.HasSuffix(loc, "/join") {
		t.Fatalf("Location of a stateless wait = %q", loc)
	}
	// threads.join_stream(tid): stream_mode defaults to run_modes; the
	// stream stays open, so only its start is read here.
	if st := openStreamStatus(s, "/threads/"+tid+"/stream?stream_mode=run_modes"); st != 200 {
		t.Fatalf("threads.join_stream: %d", st)
	}
	// assistants.delete(id, delete_threads=True) of a new assistant.
	aid := field(py.ok("POST", "/assistants", body(`{"graph_id":"echo"}`)), "assistant_id").(string)
	py.ok("DELETE", "/assistants/"+aid+"?delete_threads=true", nil)
}
