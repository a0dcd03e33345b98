package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/assistants"
	"agentserver/internal/config"
	"agentserver/internal/httpapi"
	"agentserver/internal/server"
	"agentserver/internal/storage"
	"agentserver/internal/testutil"
	"agentserver/internal/tools"
)

// nested returns a value with depth levels of objects around a string.
func nested(depth int) any {
	var v any = "leaf"
	for range depth {
		v = map[string]any{"a": v}
	}
	return v
}

// nestedText is nested(depth) as JSON text, built without the encoder.
func nestedText(depth int) string {
	return strings.Repeat(`{"a":`, depth) + `"leaf"` + strings.Repeat("}", depth)
}

// TestDeepNestingIsRefusedEverywhere sends bodies nested just past the
// cap (and far past it, at the decoder's own limit) to routes that store
// what they get: each is refused with 422 and stores nothing, while a body
// at the cap is stored and reads back through get, list and search.
func TestDeepNestingIsRefusedEverywhere(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	// The body wraps input in one object, so input may nest one level less.
	okInput := nested(httpapi.MaxJSONDepth - 2)
	for _, depth := range []int{httpapi.MaxJSONDepth + 1, 9_999} {
		for _, req := range []struct{ method, path, body string }{
			{"POST", "/threads/" + tid + "/runs", `{"assistant_id":"echo","input":` + nestedText(depth) + `}`},
			{"POST", "/runs/wait", `{"assistant_id":"echo","input":` + nestedText(depth) + `}`},
			{"POST", "/threads", `{"metadata":` + nestedText(depth) + `}`},
			{"PUT", "/store/items", `{"namespace":["n"],"key":"k","value":` + nestedText(depth) + `}`},
			{"POST", "/threads/" + tid + "/state", `{"values":` + nestedText(depth) + `}`},
		} {
			r := s.Do(req.method, req.path, req.body)
			testutil.WantError(t, r, http.StatusUnprocessableEntity, "invalid_request")
			if !strings.Contains(r.Object(t)["detail"].(string), fmt.Sprint(httpapi.MaxJSONDepth)) {
				t.Fatalf("%s %s: the error does not name the limit: %s", req.method, req.path, r.Raw)
			}
		}
	}
	if n := len(s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)); n != 0 {
		t.Fatalf("%d runs stored from refused bodies", n)
	}
	run := s.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "echo", "input": okInput, "after_seconds": 3600}).Object(t)
	rid := run["run_id"].(string)
	s.Must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil)
	if n := len(s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)); n != 1 {
		t.Fatalf("list has %d runs, want 1", n)
	}
	s.Must(200, "POST", "/runs/search", map[string]any{})
	s.Must(200, "POST", "/threads/search", map[string]any{})
}

// TestStartupFailsUnreadableRun stores a pending run whose record nests
// deeper than the decoder reads (as an earlier build accepted), then starts
// the server: it must start, fail that run with a readable record, settle
// its thread, and list and search must work.
func TestStartupFailsUnreadableRun(t *testing.T) {
	dir := t.TempDir()
	tid, rid := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	db, err := testutil.OpenDatabase(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	err = db.Update(context.Background(), func(tx *storage.Tx) error {
		if err := tx.PutThread(storage.Thread{ThreadID: tid, CreatedAt: now, UpdatedAt: now, Status: "busy", Metadata: map[string]any{}}); err != nil {
			return err
		}
		return tx.PutRun(storage.Run{
			RunID: rid, ThreadID: tid, AssistantID: assistants.SystemID("echo"), GraphID: "echo",
			CreatedAt: now, UpdatedAt: now, Status: storage.RunPending, Metadata: map[string]any{"m": 1},
			Kwargs: storage.RunOptions{Input: nested(10_001)}, MultitaskStrategy: "enqueue",
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, DataDir: dir})
	run := s.Must(200, "GET", fmt.Sprintf("/threads/%s/runs/%s", tid, rid), nil).Object(t)
	if run["status"] != "error" || run["thread_id"] != tid.String() || run["assistant_id"] != assistants.SystemID("echo").String() {
		t.Fatalf("recovered run = %v", run)
	}
	if n := len(s.Must(200, "GET", fmt.Sprintf("/threads/%s/runs", tid), nil).List(t)); n != 1 {
		t.Fatalf("list has %d runs, want 1", n)
	}
	s.Must(200, "POST", "/runs/search", map[string]any{})
	if th := s.Must(200, "GET", "/threads/"+tid.String(), nil).Object(t); th["status"] != "error" {
		t.Fatalf("thread status %v, want error", th["status"])
	}
}

// TestBodyLimit sends bodies over a small configured limit, with and without
// a Content-Length, and expects 413 with a JSON error; a body under the
// limit passes.
func TestBodyLimit(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Configure: func(c *config.Config) { c.MaxBodyBytes = 1024 }})
	big := `{"metadata":{"k":"` + strings.Repeat("x", 2048) + `"}}`
	testutil.WantError(t, s.Do("POST", "/threads", big), http.StatusRequestEntityTooLarge, "payload_too_large")

	req, err := http.NewRequest("POST", s.URL()+"/threads", io.MultiReader(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1 // chunked: the limit must hold while reading
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(raw), "payload_too_large") {
		t.Fatalf("chunked body: status %d: %s", resp.StatusCode, raw)
	}
	s.Must(200, "POST", "/threads", map[string]any{"metadata": map[string]any{"k": "small"}})
	if n := len(s.Must(200, "POST", "/threads/search", map[string]any{}).List(t)); n != 1 {
		t.Fatalf("%d threads, want only the small one", n)
	}
}

// TestLimitDefaultsAgree checks that the configuration's defaults are the
// ones the HTTP layer and the tools fall back to.
func TestLimitDefaultsAgree(t *testing.T) {
	if config.Default().MaxBodyBytes != httpapi.DefaultMaxBodyBytes {
		t.Fatal("the config default and the HTTP layer's default body limit differ")
	}
	if config.Default().WorkspaceQuota != tools.DefaultWorkspaceQuota {
		t.Fatal("the config default and the tools' default quota differ")
	}
}

// TestStalledBodyIsCut sends the headers of a request and part of its body,
// then stalls (or trickles the rest byte by byte): the server must stop
// waiting within the stall timeout (or the whole-body timeout) and answer
// 408 with a JSON error.
func TestStalledBodyIsCut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    server.Options
		trickle bool
	}{
		{"stall", server.Options{BodyStallTimeout: 300 * time.Millisecond}, false},
		{"trickle", server.Options{BodyStallTimeout: 5 * time.Second, BodyReadTimeout: 500 * time.Millisecond}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testutil.StartServer(t, testutil.Options{Server: tc.opts})
			conn, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST /threads HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"metadata\":")
			done := make(chan struct{})
			defer close(done)
			if tc.trickle {
				go func() {
					tick := time.NewTicker(50 * time.Millisecond)
					defer tick.Stop()
					for {
						select {
						case <-done:
							return
						case <-tick.C:
							if _, err := conn.Write([]byte(" ")); err != nil {
								return
							}
						}
					}
				}()
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(raw), "request_timeout") {
				t.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
			// The server closes the connection after the answer instead
			// of waiting for the rest of the body.
			wantClosed(t, conn, 2*time.Second)
		})
	}
}

// wantClosed fails unless the server closes conn within d (a read ends in
// EOF or a reset rather than a timeout).
func wantClosed(t *testing.T, conn net.Conn, d time.Duration) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		t.Fatalf("the connection is still open %s after the answer", d)
	}
}

// TestTooLargeBodyAnswerReachesClient sends bodies over the limit the
// way curl and most clients do: the whole body first, then the answer is
// read. The server must read and discard the rest so that the body can be
// sent and the 413 JSON answer read, with and without Connection: close
// and with a chunked body, then close the connection. Before, with
// Connection: close the server closed at once and the client's send failed
// with a reset connection.
func TestTooLargeBodyAnswerReachesClient(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Configure: func(c *config.Config) { c.MaxBodyBytes = 1 << 20 }})
	const size = 16 << 20 // more than the socket buffers of a loopback connection hold
	chunk := strings.Repeat("x", 64<<10)
	for _, tc := range []struct {
		name, headers string
		chunked       bool
	}{
		{"content-length, connection close", fmt.Sprintf("Content-Length: %d\r\nConnection: close\r\n", size), false},
		{"content-length", fmt.Sprintf("Content-Length: %d\r\n", size), false},
		{"chunked, connection close", "Transfer-Encoding: chunked\r\nConnection: close\r\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(30 * time.Second))
			w := bufio.NewWriter(conn)
			fmt.Fprintf(w, "POST /threads HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n%s\r\n", tc.headers)
			for sent := 0; sent < size; sent += len(chunk) {
				if tc.chunked {
					fmt.Fprintf(w, "%x\r\n%s\r\n", len(chunk), chunk)
				} else {
					w.WriteString(chunk)
				}
			}
			if tc.chunked {
				w.WriteString("0\r\n\r\n")
			}
			if err := w.Flush(); err != nil {
				t.Fatalf("sending the body: %v", err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(raw), "payload_too_large") {
				t.Fatalf("status %d: %s", resp.StatusCode, raw)
			}
			wantClosed(t, conn, 5*time.Second)
		})
	}
	if n := len(s.Must(200, "POST", "/threads/search", map[string]any{}).List(t)); n != 0 {
		t.Fatalf("%d threads stored from refused bodies", n)
	}
}

// TestTrailingDataIsRefused sends a JSON body followed by more data.
func TestTrailingDataIsRefused(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	for _, req := range []struct{ method, path, body string }{
		{"POST", "/threads", `{"metadata":{}} {"metadata":{"x":1}}`},
		{"POST", "/threads/" + tid + "/runs", `{"assistant_id":"echo"}garbage`},
		{"PUT", "/store/items", `{"namespace":["n"],"key":"k","value":{}}]`},
	} {
		r := s.Do(req.method, req.path, req.body)
		testutil.WantError(t, r, http.StatusUnprocessableEntity, "invalid_request")
	}
	if n := len(s.Must(200, "POST", "/threads/search", map[string]any{}).List(t)); n != 1 {
		t.Fatalf("%d threads, want 1", n)
	}
	s.Must(200, "POST", "/threads", "{}\n\t ")
}

// TestMetadataLimits sends metadata with too many keys and too many bytes
// to every kind of route that stores metadata.
func TestMetadataLimits(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	manyKeys := map[string]any{}
	for i := range httpapi.MaxMetadataKeys + 1 {
		manyKeys[fmt.Sprint("k", i)] = i
	}
	bigValue := map[string]any{"k": strings.Repeat("x", httpapi.MaxMetadataBytes)}
	for _, meta := range []map[string]any{manyKeys, bigValue} {
		for _, req := range []struct{ method, path string }{
			{"POST", "/threads"},
			{"PATCH", "/threads/" + tid},
			{"POST", "/assistants"},
			{"POST", "/threads/" + tid + "/runs"},
		} {
			body := map[string]any{"metadata": meta, "graph_id": "echo", "assistant_id": "echo"}
			testutil.WantError(t, s.Do(req.method, req.path, body), http.StatusRequestEntityTooLarge, "payload_too_large")
		}
		batch := []any{map[string]any{"assistant_id": "echo", "metadata": meta}}
		testutil.WantError(t, s.Do("POST", "/runs/batch", batch), http.StatusRequestEntityTooLarge, "payload_too_large")
	}
	if meta := s.Must(200, "GET", "/threads/"+tid, nil).Object(t)["metadata"].(map[string]any); len(meta) != 0 {
		t.Fatalf("metadata changed: %v", meta)
	}
}

// TestForwardedHeaderLimits sends x-* headers that a run would copy into
// its config: one too long, or too many, is refused.
func TestForwardedHeaderLimits(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	body := map[string]any{"assistant_id": "echo", "input": testutil.UserInput("hi")}
	long := http.Header{"X-Big": {strings.Repeat("v", httpapi.MaxForwardedHeaderBytes+1)}}
	testutil.WantError(t, s.DoWith("POST", "/threads/"+tid+"/runs", body, long), http.StatusRequestEntityTooLarge, "payload_too_large")
	many := http.Header{}
	for i := range httpapi.MaxForwardedHeaders + 1 {
		many.Set(fmt.Sprint("X-H", i), "v")
	}
	testutil.WantError(t, s.DoWith("POST", "/threads/"+tid+"/runs", body, many), http.StatusRequestEntityTooLarge, "payload_too_large")
	if n := len(s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)); n != 0 {
		t.Fatalf("%d runs stored", n)
	}
	ok := http.Header{"X-Small": {"v"}}
	r := s.DoWith("POST", "/threads/"+tid+"/runs/wait", body, ok)
	if r.Status != 200 {
		t.Fatalf("small header: %d %s", r.Status, r.Raw)
	}
}

// TestStoreKeyAndLabelLimits puts items whose key or namespace would make a
// database key too large: 422, not 500.
func TestStoreKeyAndLabelLimits(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	long := strings.Repeat("k", 40_000)
	for _, body := range []map[string]any{
		{"namespace": []string{"n"}, "key": long, "value": map[string]any{}},
		{"namespace": []string{long}, "key": "k", "value": map[string]any{}},
		{"namespace": []string{strings.Repeat("a", 3000), strings.Repeat("b", 3000)}, "key": "k", "value": map[string]any{}},
	} {
		testutil.WantError(t, s.Do("PUT", "/store/items", body), http.StatusUnprocessableEntity, "invalid_request")
	}
	s.Must(200, "GET", "/store/items?namespace=n&key="+long, nil)
	s.Must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"n"}, "key": strings.Repeat("k", 1024), "value": map[string]any{}})
}

// TestRunFieldChecks sends run bodies with a command.goto of a wrong type,
// an after_seconds that would overflow the delay, and a recursion limit
// below 1: each is refused and nothing is stored.
func TestRunFieldChecks(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	tid := testutil.NewThread(t, s)
	for _, body := range []map[string]any{
		{"command": map[string]any{"goto": 5}},
		{"command": map[string]any{"goto": []any{"echo", 1}}},
		{"command": map[string]any{"goto": map[string]any{"input": 1}}},
		{"command": map[string]any{"goto": true}},
		{"after_seconds": 1e308},
		{"after_seconds": 4e7},
		{"config": map[string]any{"recursion_limit": 0}},
		{"config": map[string]any{"recursion_limit": -3}},
	} {
		body["assistant_id"] = "echo"
		r := s.Do("POST", "/threads/"+tid+"/runs", body)
		testutil.WantError(t, r, http.StatusUnprocessableEntity, "invalid_request")
	}
	testutil.WantError(t, s.Do("POST", "/assistants", map[string]any{"graph_id": "echo", "config": map[string]any{"recursion_limit": 0}}), http.StatusUnprocessableEntity, "invalid_request")
	if n := len(s.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)); n != 0 {
		t.Fatalf("%d runs stored", n)
	}
	for _, body := range []map[string]any{
		{"command": map[string]any{"goto": []any{"echo", map[string]any{"node": "echo", "input": 1}}}, "after_seconds": 3600},
		{"config": map[string]any{"recursion_limit": 1}, "after_seconds": 31_536_000},
	} {
		body["assistant_id"] = "echo"
		s.Must(200, "POST", "/threads/"+tid+"/runs", body)
	}
}

// rawExchange sends raw bytes on a new connection and reads the answer.
func rawExchange(t *testing.T, s *testutil.Server, request string) (*http.Response, map[string]any) {
	t.Helper()
	conn, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("status %d: body is not JSON: %q", resp.StatusCode, raw)
	}
	return resp, body
}

// TestFramingErrorsAreJSON sends requests net/http refuses before any
// handler runs: a header block over the limit (431), a malformed request
// line (400) and an unknown transfer encoding (net/http's 501, answered as
// the 400 it is). Each answer carries the JSON error body; a normal request
// on the same server is unaffected.
func TestFramingErrorsAreJSON(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{})
	huge := "GET /ok HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("v", 80<<10) + "\r\n\r\n"
	resp, body := rawExchange(t, s, huge)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || body["code"] != "headers_too_large" || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("huge headers: %d %v", resp.StatusCode, body)
	}
	resp, body = rawExchange(t, s, "GET /threads/%zz HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != http.StatusBadRequest || body["code"] != "bad_request" {
		t.Fatalf("malformed request line: %d %v", resp.StatusCode, body)
	}
	resp, body = rawExchange(t, s, "POST /threads HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n")
	if resp.StatusCode != http.StatusBadRequest || body["code"] != "unsupported_transfer_encoding" {
		t.Fatalf("unknown transfer encoding: %d %v", resp.StatusCode, body)
	}
	resp, body = rawExchange(t, s, "GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 200 || body["ok"] != true {
		t.Fatalf("normal request: %d %v", resp.StatusCode, body)
	}
}

// TestLargeBodySlotsAreNotHeldByHandlers starts, with large inputs, as many
// waiting runs (runs/wait on a gated graph) as there are processors, then
// puts a large store item: it must be stored while the runs still wait.
// The slots that bound large bodies cover their checks and decoding, not
// handlers that wait for minutes.
func TestLargeBodySlotsAreNotHeldByHandlers(t *testing.T) {
	s := testutil.StartTestGraphs(t)
	gate := "large-body-" + uuid.NewString()
	defer testutil.Release(gate)
	filler := strings.Repeat("x", httpapi.LargeBodyBytes)
	waits := runtime.GOMAXPROCS(0)
	done := make(chan testutil.Response, waits)
	for range waits {
		go func() {
			done <- s.Try("POST", "/runs/wait", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate, "filler": filler}})
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := testutil.AwaitWaiters(ctx, gate, waits); err != nil {
		t.Fatal(err)
	}
	s.Must(204, "PUT", "/store/items", map[string]any{"namespace": []string{"n"}, "key": "large", "value": map[string]any{"filler": filler}})
	select {
	case r := <-done:
		t.Fatalf("a waiting run ended before its gate opened: %d %s", r.Status, r.Raw)
	default:
	}
	testutil.Release(gate)
	for range waits {
		if r := <-done; r.Status != 200 {
			t.Fatalf("runs/wait: %d %s", r.Status, r.Raw)
		}
	}
}
