package a2a_test

import (
	"net/http"
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/testutil"
)

const graphsJSON = `{"graphs": {"echo": "builtin:echo", "gated": "builtin:test-gated", "asking": "builtin:test-asking"}}`

func rpc(method string, params any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
}

func userMessage(text, contextID string) map[string]any {
	m := map[string]any{"kind": "message", "messageId": uuid.NewString(), "role": "user", "parts": []any{map[string]any{"kind": "text", "text": text}}}
	if contextID != "" {
		m["contextId"] = contextID
	}
	return m
}

// result posts a JSON-RPC call and returns its result, failing on an error.
func result(t *testing.T, s *testutil.Server, assistant, method string, params any) map[string]any {
	t.Helper()
	out := s.Must(200, "POST", "/a2a/"+assistant, rpc(method, params)).Object(t)
	if out["error"] != nil {
		t.Fatalf("%s: %v", method, out["error"])
	}
	return out["result"].(map[string]any)
}

func rpcError(t *testing.T, s *testutil.Server, assistant, method string, params any) float64 {
	t.Helper()
	out := s.Do("POST", "/a2a/"+assistant, rpc(method, params)).Object(t)
	e, ok := out["error"].(map[string]any)
	if !ok {
		t.Fatalf("%s succeeded: %v", method, out)
	}
	return e["code"].(float64)
}

func state(task map[string]any) string {
	return task["status"].(map[string]any)["state"].(string)
}

func answer(task map[string]any) string {
	arts, _ := task["artifacts"].([]any)
	if len(arts) == 0 {
		return ""
	}
	parts := arts[0].(map[string]any)["parts"].([]any)
	text, _ := parts[0].(map[string]any)["text"].(string)
	return text
}

func TestA2ASendGetAndContext(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON})
	task := result(t, s, "echo", "message/send", map[string]any{"message": userMessage("hello", "")})
	if task["kind"] != "task" || state(task) != "completed" || answer(task) == "" || task["contextId"] == "" {
		t.Fatalf("task = %v", task)
	}
	ctxID := task["contextId"].(string)
	// The context is the thread: a second message lands on it.
	second := result(t, s, "echo", "message/send", map[string]any{"message": userMessage("again", ctxID)})
	if second["contextId"] != ctxID || second["id"] == task["id"] {
		t.Fatalf("second = %v", second)
	}
	msgs := s.Must(200, "GET", "/threads/"+ctxID+"/state", nil).Object(t)["values"].(map[string]any)["messages"].([]any)
	if len(msgs) < 4 {
		t.Fatalf("thread messages = %v", msgs)
	}
	got := result(t, s, "echo", "tasks/get", map[string]any{"id": task["id"]})
	if got["id"] != task["id"] || state(got) != "completed" {
		t.Fatalf("tasks/get = %v", got)
	}
	if code := rpcError(t, s, "echo", "tasks/get", map[string]any{"id": uuid.NewString()}); code != -32001 {
		t.Fatalf("unknown task code = %v", code)
	}
	if code := rpcError(t, s, "echo", "tasks/cancel", map[string]any{"id": task["id"]}); code != -32002 {
		t.Fatalf("cancel of a completed task code = %v", code)
	}
	if code := rpcError(t, s, "echo", "nope/nope", map[string]any{}); code != -32601 {
		t.Fatalf("unknown method code = %v", code)
	}
	if code := rpcError(t, s, "echo", "message/send", map[string]any{"message": map[string]any{"parts": []any{}}}); code != -32602 {
		t.Fatalf("empty message code = %v", code)
	}
	list := result(t, s, "echo", "ListTasks", map[string]any{"contextId": ctxID})
	if tasks := list["tasks"].([]any); len(tasks) != 2 || state(tasks[0].(map[string]any)) != "TASK_STATE_COMPLETED" {
		t.Fatalf("ListTasks = %v", list)
	}
}

func TestA2ANonBlockingCancelAndV1Names(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON})
	gate := "a2a-" + uuid.NewString()
	sent := result(t, s, "gated", "SendMessage", map[string]any{
		"message":       map[string]any{"messageId": uuid.NewString(), "role": "ROLE_USER", "parts": []any{map[string]any{"text": gate}}},
		"configuration": map[string]any{"returnImmediately": true},
	})
	task := sent["task"].(map[string]any)
	if st := state(task); st != "TASK_STATE_SUBMITTED" && st != "TASK_STATE_WORKING" {
		t.Fatalf("non-blocking send = %v", sent)
	}
	cancelled := result(t, s, "gated", "CancelTask", map[string]any{"id": task["id"]})
	if state(cancelled) != "TASK_STATE_CANCELED" {
		t.Fatalf("CancelTask = %v", cancelled)
	}
	if got := result(t, s, "gated", "tasks/get", map[string]any{"id": task["id"]}); state(got) != "canceled" {
		t.Fatalf("tasks/get after cancel = %v", got)
	}
	// A task of one assistant is unknown to another.
	if code := rpcError(t, s, "echo", "tasks/get", map[string]any{"id": task["id"]}); code != -32001 {
		t.Fatalf("cross-assistant get code = %v", code)
	}
}

func TestA2AStreamAndResubscribe(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON})
	gate := "a2a-" + uuid.NewString()
	resp := s.Stream("POST", "/a2a/gated", rpc("message/stream", map[string]any{"message": userMessage(gate, "")}), nil)
	defer resp.Body.Close()
	rd := testutil.NewSSEReader(resp.Body)
	first, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	task := first.Data.(map[string]any)["result"].(map[string]any)
	if task["kind"] != "task" {
		t.Fatalf("first event = %v", first.Data)
	}
	// A second client follows the same task.
	sub := s.Stream("POST", "/a2a/gated", rpc("tasks/resubscribe", map[string]any{"id": task["id"]}), nil)
	defer sub.Body.Close()
	testutil.Release(gate)
	for _, r := range []*testutil.SSEReader{rd, testutil.NewSSEReader(sub.Body)} {
		evs, err := r.All()
		if err != nil {
			t.Fatal(err)
		}
		last := evs[len(evs)-1].Data.(map[string]any)["result"].(map[string]any)
		if last["kind"] != "status-update" || last["final"] != true || state(last) != "completed" {
			t.Fatalf("last event = %v", last)
		}
		art := evs[len(evs)-2].Data.(map[string]any)["result"].(map[string]any)
		if art["kind"] != "artifact-update" || art["artifact"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"] != "released "+gate {
			t.Fatalf("artifact event = %v", art)
		}
	}
}

func TestA2AInputRequiredAndResume(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON})
	task := result(t, s, "asking", "message/send", map[string]any{"message": userMessage("start", "")})
	if state(task) != "input-required" {
		t.Fatalf("task = %v", task)
	}
	question := task["status"].(map[string]any)["message"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"]
	if question != `{"question":"approve?"}` {
		t.Fatalf("question = %v", question)
	}
	done := result(t, s, "asking", "message/send", map[string]any{"message": userMessage("yes", task["contextId"].(string))})
	if state(done) != "completed" || answer(done) != "answered yes" {
		t.Fatalf("resumed = %v", done)
	}
	// The first task no longer waits: a later run exists.
	if got := result(t, s, "asking", "tasks/get", map[string]any{"id": task["id"]}); state(got) != "completed" {
		t.Fatalf("first task now = %v", got)
	}
}

func TestA2AAgentCard(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON, APIKey: "k"})
	if r := s.Do("GET", "/.well-known/agent-card.json?assistant_id=echo", nil); r.Status != 401 {
		t.Fatalf("card without key: %d", r.Status)
	}
	s.Header = map[string][]string{"X-Api-Key": {"k"}}
	card := s.Must(200, "GET", "/.well-known/agent-card.json?assistant_id=echo", nil).Object(t)
	under := s.Must(200, "GET", "/a2a/echo/.well-known/agent-card.json", nil).Object(t)
	if card["url"] != under["url"] || card["protocolVersion"] != "0.3.0" || card["capabilities"].(map[string]any)["streaming"] != true {
		t.Fatalf("cards = %v / %v", card, under)
	}
	if url, _ := card["url"].(string); url != s.URL()+"/a2a/"+card["skills"].([]any)[0].(map[string]any)["id"].(string) {
		t.Fatalf("card url = %v", card["url"])
	}
	s.Must(404, "GET", "/.well-known/agent-card.json?assistant_id=missing", nil)
	s.Must(400, "GET", "/.well-known/agent-card.json", nil)
}

// TestOptionsNeverAnswersACard sends OPTIONS, as a preflight and as a plain
// request, to the card routes and an API route of a server with an API
// key, without the key: each is answered 204 with the CORS headers and no
// body. Before, a plain OPTIONS reached the card handler and answered the
// card without the key. Other methods than GET on the card are 405.
func TestOptionsNeverAnswersACard(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON, APIKey: "k"})
	for _, path := range []string{"/.well-known/agent-card.json?assistant_id=echo", "/a2a/echo/.well-known/agent-card.json", "/a2a/echo/agent-card.json", "/threads/search"} {
		for _, preflight := range []bool{false, true} {
			h := http.Header{"Origin": {"http://localhost:3000"}}
			if preflight {
				h.Set("Access-Control-Request-Method", "GET")
			}
			r := s.DoWith("OPTIONS", path, nil, h)
			if r.Status != http.StatusNoContent || len(r.Raw) != 0 || r.Header.Get("Access-Control-Allow-Methods") == "" || r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" {
				t.Fatalf("OPTIONS %s (preflight %v): %d %v %q", path, preflight, r.Status, r.Header, r.Raw)
			}
		}
	}
	s.Header = http.Header{"X-Api-Key": {"k"}}
	for _, method := range []string{"POST", "PUT", "DELETE"} {
		if r := s.Do(method, "/.well-known/agent-card.json?assistant_id=echo", nil); r.Status != http.StatusMethodNotAllowed || r.Object(t)["code"] != "method_not_allowed" {
			t.Fatalf("%s on the card: %d %s", method, r.Status, r.Raw)
		}
	}
}

// TestA2AEnvelopeErrors sends raw bodies that are not valid requests, and
// requests with bad params: each gets the JSON-RPC 2.0 code (JSON that is
// not a request object is an invalid request, not a parse error; an id
// must be a string, an integer or null; a task call without its task id
// has invalid params), with the request's id when it could be read and
// null otherwise; nothing runs.
func TestA2AEnvelopeErrors(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: graphsJSON})
	send := `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}}`
	for _, c := range []struct {
		body string
		code float64
		id   any
	}{
		{`{"jsonrpc":"2.0",`, -32700, nil},
		{`[]`, -32600, nil},
		{`[` + send + `]`, -32600, nil},
		{`"message/send"`, -32600, nil},
		{`42`, -32600, nil},
		{`null`, -32600, nil},
		{`true`, -32600, nil},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"message/send","params":{}}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":[1],"method":"message/send","params":{}}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":1.5,"method":"message/send","params":{}}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":true,"method":"message/send","params":{}}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":"s","method":7}`, -32600, "s"},
		{`{"jsonrpc":"1.0","id":3,"method":"tasks/get","params":{"id":"x"}}`, -32600, 3.0},
		{`{"jsonrpc":"2.0","id":4,"method":"tasks/nope","params":{}}`, -32601, 4.0},
		{`{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{}}`, -32602, 5.0},
		{`{"jsonrpc":"2.0","id":6,"method":"GetTask","params":{}}`, -32602, 6.0},
		{`{"jsonrpc":"2.0","id":7,"method":"tasks/get"}`, -32602, 7.0},
		{`{"jsonrpc":"2.0","id":8,"method":"tasks/get","params":null}`, -32602, 8.0},
		{`{"jsonrpc":"2.0","id":9,"method":"tasks/cancel","params":["x"]}`, -32602, 9.0},
		{`{"jsonrpc":"2.0","id":10,"method":"tasks/get","params":{"id":"` + uuid.NewString() + `"}}`, -32001, 10.0},
		{`{"jsonrpc":"2.0","id":null,"method":"tasks/get","params":{"id":""}}`, -32602, nil},
	} {
		out := s.Do("POST", "/a2a/echo", c.body).Object(t)
		e, _ := out["error"].(map[string]any)
		if e == nil || e["code"] != c.code || out["id"] != c.id || out["jsonrpc"] != "2.0" {
			t.Errorf("%s: answer %v, want code %v with id %v", c.body, out, c.code, c.id)
		}
	}
	if n := s.Must(200, "POST", "/threads/count", nil).JSON; n != 0.0 {
		t.Fatalf("refused requests made %v threads", n)
	}
	// A string id is echoed as sent.
	if out := s.Must(200, "POST", "/a2a/echo", `{"jsonrpc":"2.0","id":"abc","method":"tasks/list"}`).Object(t); out["id"] != "abc" || out["result"] == nil {
		t.Fatalf("tasks/list with a string id = %v", out)
	}
}
