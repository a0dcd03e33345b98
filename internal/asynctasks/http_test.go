package asynctasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/asynctasks"
	"agentserver/internal/errdefs"
	"agentserver/internal/graph"
	"agentserver/internal/graphs"
	"agentserver/internal/testutil"
)

// contractGraphs adds two graphs of this file to the testutil ones:
//   - hold waits on the gate named by the last message's text, then answers
//     "released <name>";
//   - ask pauses on an interrupt whose value is {"question": <text>}.
const contractGraphs = `{"graphs": {"echo": "builtin:echo", "gated": "builtin:test-gated", "failing": "builtin:test-failing", "steps": "builtin:test-steps",
	"hold": "builtin:test-asynctasks-hold", "ask": "builtin:test-asynctasks-ask"}}`

func init() {
	graphs.RegisterBuiltin("test-asynctasks-hold", func() *graphs.Definition {
		d := graphs.Echo()
		d.Graph = &graph.Graph{Entry: "hold", Nodes: map[string]graph.Node{"hold": holdNode}}
		return d
	})
	graphs.RegisterBuiltin("test-asynctasks-ask", func() *graphs.Definition {
		d := graphs.Echo()
		d.Graph = &graph.Graph{Entry: "ask", Nodes: map[string]graph.Node{"ask": func(_ context.Context, _ *graph.Runtime, st graph.State) (graph.Update, error) {
			return graph.Update{}, graph.Interrupt(map[string]any{"question": lastText(st)})
		}}}
		return d
	})
}

func holdNode(ctx context.Context, _ *graph.Runtime, st graph.State) (graph.Update, error) {
	name := lastText(st)
	select {
	case <-testutil.Gate(name):
	case <-ctx.Done():
		return graph.Update{}, context.Cause(ctx)
	}
	msg := map[string]any{"type": "ai", "id": uuid.NewString(), "content": "released " + name}
	return graph.Update{Values: map[string]any{"messages": []any{msg}}}, nil
}

func lastText(st graph.State) string {
	msgs, _ := st["messages"].([]any)
	if len(msgs) == 0 {
		return ""
	}
	m, _ := msgs[len(msgs)-1].(map[string]any)
	s, _ := m["content"].(string)
	return s
}

func noEnv(string) string { return "" }

func newHTTP(t *testing.T, cfg asynctasks.HTTPConfig) *asynctasks.HTTP {
	t.Helper()
	if cfg.Getenv == nil {
		cfg.Getenv = noEnv
	}
	h, err := asynctasks.NewHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// contractCase is one behaviour both transports must show. gate prefixes
// gate names so that no two runs of a case share a gate (gates stay open).
type contractCase struct {
	name string
	run  func(t *testing.T, s *testutil.Server, x asynctasks.Transport, gate string)
}

// threadCases hold Local and HTTP, which create the subagent's thread
// themselves, to what they record on it (A2A agents own their contexts).
var threadCases = []contractCase{
	{"start records the parent on the subagent's thread", func(t *testing.T, s *testutil.Server, x asynctasks.Transport, _ string) {
		parent := asynctasks.Parent{ThreadID: uuid.NewString(), RunID: uuid.NewString(), AgentName: "researcher"}
		tid, rid, err := x.Start(asynctasks.WithParent(t.Context(), parent), "echo", "hello")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := x.Wait(t.Context(), tid, rid); err != nil {
			t.Fatal(err)
		}
		th, err := s.Threads.Get(t.Context(), uuid.MustParse(tid))
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{asynctasks.MetaParentThreadID: parent.ThreadID, asynctasks.MetaParentRunID: parent.RunID, asynctasks.MetaAgentName: "researcher"}
		for k, v := range want {
			if th.Metadata[k] != v {
				t.Errorf("thread metadata %s = %v, want %v (metadata %v)", k, th.Metadata[k], v, th.Metadata)
			}
		}
		// Without a parent nothing is recorded.
		tid, _, err = x.Start(t.Context(), "echo", "orphan")
		if err != nil {
			t.Fatal(err)
		}
		if th, err = s.Threads.Get(t.Context(), uuid.MustParse(tid)); err != nil || th.Metadata[asynctasks.MetaParentThreadID] != nil {
			t.Fatalf("a thread started without a parent has metadata %v (%v)", th.Metadata, err)
		}
	}},
}

var contractCases = []contractCase{
	{"start and wait on echo", func(t *testing.T, _ *testutil.Server, x asynctasks.Transport, _ string) {
		ctx := t.Context()
		tid, rid, err := x.Start(ctx, "echo", "hello")
		if err != nil {
			t.Fatal(err)
		}
		if uuid.Validate(tid) != nil || uuid.Validate(rid) != nil {
			t.Fatalf("ids %q %q are not UUIDs", tid, rid)
		}
		info, err := x.Wait(ctx, tid, rid)
		if err != nil {
			t.Fatal(err)
		}
		if want := (asynctasks.RunInfo{Status: asynctasks.StatusSuccess}); !reflect.DeepEqual(info, want) {
			t.Fatalf("Wait = %+v, want %+v", info, want)
		}
		if info, err := x.Run(ctx, tid, rid); err != nil || info.Status != asynctasks.StatusSuccess {
			t.Fatalf("Run = %+v, %v", info, err)
		}
		msg, err := x.LastMessage(ctx, tid)
		if err != nil || msg != "echo: hello" {
			t.Fatalf("LastMessage = %#v, %v", msg, err)
		}
	}},
	{"wait blocks until the run ends", func(t *testing.T, _ *testutil.Server, x asynctasks.Transport, gate string) {
		ctx := t.Context()
		name := gate + "-wait"
		tid, rid, err := x.Start(ctx, "hold", name)
		if err != nil {
			t.Fatal(err)
		}
		type result struct {
			info asynctasks.RunInfo
			err  error
		}
		done := make(chan result, 1)
		go func() {
			info, err := x.Wait(ctx, tid, rid)
			done <- result{info, err}
		}()
		waitStatus(t, x, tid, rid, asynctasks.StatusRunning)
		select {
		case r := <-done:
			t.Fatalf("Wait returned before the run ended: %+v, %v", r.info, r.err)
		default:
		}
		testutil.Release(name)
		r := <-done
		if r.err != nil || r.info.Status != asynctasks.StatusSuccess {
			t.Fatalf("Wait = %+v, %v", r.info, r.err)
		}
		if msg, err := x.LastMessage(ctx, tid); err != nil || msg != "released "+name {
			t.Fatalf("LastMessage = %#v, %v", msg, err)
		}
	}},
	{"failing run reports its error", func(t *testing.T, _ *testutil.Server, x asynctasks.Transport, _ string) {
		ctx := t.Context()
		tid, rid, err := x.Start(ctx, "failing", "hi")
		if err != nil {
			t.Fatal(err)
		}
		info, err := x.Wait(ctx, tid, rid)
		if err != nil || info.Status != asynctasks.StatusError || !strings.Contains(info.Error, "boom") {
			t.Fatalf("Wait = %+v, %v; want error with boom", info, err)
		}
		info, err = x.Run(ctx, tid, rid)
		if err != nil || info.Status != asynctasks.StatusError || !strings.Contains(info.Error, "boom") {
			t.Fatalf("Run = %+v, %v; want error with boom", info, err)
		}
	}},
	{"update interrupts the current run", func(t *testing.T, _ *testutil.Server, x asynctasks.Transport, gate string) {
		ctx := t.Context()
		tid, oldRun, err := x.Start(ctx, "gated", "first") // waits on the gate "" until interrupted
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, x, tid, oldRun, asynctasks.StatusRunning)
		name := gate + "-update"
		newRun, err := x.Update(ctx, tid, "hold", name)
		if err != nil {
			t.Fatal(err)
		}
		if newRun == oldRun || uuid.Validate(newRun) != nil {
			t.Fatalf("Update returned run %q (old %q)", newRun, oldRun)
		}
		if info, err := x.Wait(ctx, tid, oldRun); err != nil || info.Status != asynctasks.StatusInterrupted {
			t.Fatalf("old run: %+v, %v; want interrupted", info, err)
		}
		testutil.Release(name)
		if info, err := x.Wait(ctx, tid, newRun); err != nil || info.Status != asynctasks.StatusSuccess {
			t.Fatalf("new run: %+v, %v; want success", info, err)
		}
		if msg, err := x.LastMessage(ctx, tid); err != nil || msg != "released "+name {
			t.Fatalf("LastMessage = %#v, %v", msg, err)
		}
	}},
	{"cancel interrupts a running run", func(t *testing.T, _ *testutil.Server, x asynctasks.Transport, _ string) {
		ctx := t.Context()
		tid, rid, err := x.Start(ctx, "gated", "stop me")
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, x, tid, rid, asynctasks.StatusRunning)
		if err := x.Cancel(ctx, tid, rid); err != nil {
			t.Fatal(err)
		}
		if info, err := x.Wait(ctx, tid, rid); err != nil || info.Status != asynctasks.StatusInterrupted {
			t.Fatalf("Wait = %+v, %v; want interrupted", info, err)
		}
		if err := x.Cancel(ctx, tid, rid); err != nil {
			t.Fatalf("cancelling a finished run: %v", err)
		}
	}},
	{"a run paused on an interrupt is interrupted with its payload", func(t *testing.T, _ *testutil.Server, x asynctasks.Transport, _ string) {
		ctx := t.Context()
		tid, rid, err := x.Start(ctx, "ask", "what now?")
		if err != nil {
			t.Fatal(err)
		}
		waited, err := x.Wait(ctx, tid, rid)
		if err != nil {
			t.Fatal(err)
		}
		ran, err := x.Run(ctx, tid, rid)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range []asynctasks.RunInfo{waited, ran} {
			if info.Status != asynctasks.StatusInterrupted || len(info.Interrupts) != 1 {
				t.Fatalf("info = %+v; want interrupted with one interrupt", info)
			}
			item, _ := testutil.JSONRoundTrip(t, info.Interrupts[0]).(map[string]any)
			if want := map[string]any{"question": "what now?"}; !reflect.DeepEqual(item["value"], want) {
				t.Fatalf("interrupt = %#v; want value %v", item, want)
			}
			if id, _ := item["id"].(string); id == "" {
				t.Fatalf("interrupt %#v has no id", item)
			}
		}
	}},
	{"a thread without messages has no last message", func(t *testing.T, s *testutil.Server, x asynctasks.Transport, _ string) {
		th := s.Must(http.StatusOK, "POST", "/threads", map[string]any{}).Object(t)
		msg, err := x.LastMessage(t.Context(), th["thread_id"].(string))
		if err != nil || msg != nil {
			t.Fatalf("LastMessage = %#v, %v; want nil", msg, err)
		}
	}},
	{"unknown ids are not found", func(t *testing.T, _ *testutil.Server, x asynctasks.Transport, _ string) {
		ctx := t.Context()
		tid, rid := uuid.NewString(), uuid.NewString()
		if _, err := x.Run(ctx, tid, rid); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Run: %v; want not found", err)
		}
		if _, err := x.Wait(ctx, tid, rid); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Wait: %v; want not found", err)
		}
		if err := x.Cancel(ctx, tid, rid); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Cancel: %v; want not found", err)
		}
		if _, err := x.LastMessage(ctx, tid); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("LastMessage: %v; want not found", err)
		}
		if _, err := x.Update(ctx, tid, "echo", "hi"); err == nil {
			t.Errorf("Update on a missing thread succeeded")
		}
		if _, _, err := x.Start(ctx, "no-such-graph", "hi"); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("Start of an unknown graph: %v; want not found", err)
		}
	}},
	{"malformed ids are rejected", func(t *testing.T, _ *testutil.Server, x asynctasks.Transport, _ string) {
		ctx := t.Context()
		if _, err := x.Run(ctx, "nope", uuid.NewString()); err == nil {
			t.Error("Run accepted thread id nope")
		}
		if _, err := x.Wait(ctx, uuid.NewString(), "nope"); err == nil {
			t.Error("Wait accepted run id nope")
		}
		if err := x.Cancel(ctx, "nope", "nope"); err == nil {
			t.Error("Cancel accepted ids nope")
		}
		if _, err := x.LastMessage(ctx, "nope"); err == nil {
			t.Error("LastMessage accepted thread id nope")
		}
	}},
	{"wait ends with its context", func(t *testing.T, _ *testutil.Server, x asynctasks.Transport, _ string) {
		tid, rid, err := x.Start(t.Context(), "gated", "wait for me")
		if err != nil {
			t.Fatal(err)
		}
		waitStatus(t, x, tid, rid, asynctasks.StatusRunning)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := x.Wait(ctx, tid, rid)
			done <- err
		}()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait after cancel: %v; want context.Canceled", err)
		}
		if info, err := x.Run(t.Context(), tid, rid); err != nil || info.Status != asynctasks.StatusRunning {
			t.Fatalf("the run must outlive the waiter: %+v, %v", info, err)
		}
		if err := x.Cancel(t.Context(), tid, rid); err != nil {
			t.Fatal(err)
		}
	}},
}

func waitStatus(t *testing.T, x asynctasks.Transport, tid, rid, status string) {
	t.Helper()
	var last asynctasks.RunInfo
	var lastErr error
	testutil.Eventually(t, 10*time.Second, "run reaches "+status, func() bool {
		last, lastErr = x.Run(t.Context(), tid, rid)
		return lastErr == nil && last.Status == status
	})
}

// TestTransportContract holds Local and HTTP to one contract against a real
// server of this repo.
func TestTransportContract(t *testing.T) {
	transports := []struct {
		name string
		make func(t *testing.T, s *testutil.Server) asynctasks.Transport
	}{
		{"local", func(_ *testing.T, s *testutil.Server) asynctasks.Transport {
			l := &asynctasks.Local{}
			l.Bind(s.Threads, s.Runs)
			return l
		}},
		{"http", func(t *testing.T, s *testutil.Server) asynctasks.Transport {
			return newHTTP(t, asynctasks.HTTPConfig{URL: s.URL()})
		}},
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			s := testutil.StartServer(t, testutil.Options{Graphs: contractGraphs})
			x := tr.make(t, s)
			for _, c := range append(threadCases, contractCases...) {
				t.Run(c.name, func(t *testing.T) { c.run(t, s, x, t.Name()+"-"+uuid.NewString()) })
			}
		})
	}
}

func TestLocalUnbound(t *testing.T) {
	var l asynctasks.Local
	if _, _, err := l.Start(t.Context(), "echo", "hi"); !errors.Is(err, asynctasks.ErrUnavailable) {
		t.Fatalf("Start on an unbound Local: %v; want ErrUnavailable", err)
	}
}

func TestHTTPAPIKeyAgainstServer(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs, APIKey: "sekret"})
	env := func(k string) string {
		if k == "LANGSMITH_API_KEY" {
			return `"sekret"`
		}
		return ""
	}
	h := newHTTP(t, asynctasks.HTTPConfig{URL: s.URL(), Getenv: env})
	tid, rid, err := h.Start(t.Context(), "echo", "with key")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := h.Wait(t.Context(), tid, rid); err != nil || info.Status != asynctasks.StatusSuccess {
		t.Fatalf("Wait = %+v, %v", info, err)
	}

	anon := newHTTP(t, asynctasks.HTTPConfig{URL: s.URL()})
	_, _, err = anon.Start(t.Context(), "echo", "no key")
	var he *asynctasks.HTTPError
	if !errors.As(err, &he) || he.Code != http.StatusUnauthorized || !errors.Is(err, errdefs.ErrUnauthorized) {
		t.Fatalf("Start without a key: %v; want HTTP 401", err)
	}
	if !strings.HasPrefix(err.Error(), "HTTP 401: ") {
		t.Fatalf("error text %q", err)
	}
}

// fake is a stand-in LangGraph server on 127.0.0.1 for the cases a real
// server cannot be made to show.
type fake struct {
	*httptest.Server
	mux *http.ServeMux
	mu  sync.Mutex
	// hits counts requests by "METHOD /path-pattern".
	hits map[string]int
	// headers are the headers of every request, in order.
	headers []http.Header
}

func newFake(t *testing.T) *fake {
	f := &fake{mux: http.NewServeMux(), hits: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := f.mux.Handler(r)
		f.mu.Lock()
		f.hits[pattern]++
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		f.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) count(pattern string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.hits[pattern]
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// answerStart makes POST /threads and POST /threads/{t}/runs succeed.
func (f *fake) answerStart() {
	f.mux.HandleFunc("POST /threads", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"thread_id": uuid.NewString()})
	})
	f.mux.HandleFunc("POST /threads/{t}/runs", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"run_id": uuid.NewString(), "status": "pending"})
	})
}

const (
	runPattern   = "GET /threads/{t}/runs/{r}"
	statePattern = "GET /threads/{t}/state"
	joinPattern  = "GET /threads/{t}/runs/{r}/join"
)

func TestHTTPPausedRule(t *testing.T) {
	cases := []struct {
		name       string
		status     string
		state      string // "" answers 500
		wantStatus string
		want       []any
		stateHits  int
	}{
		{"state interrupts", "success", `{"values":{},"next":["n"],"tasks":[],"interrupts":[{"id":"i1","value":"q1"}]}`,
			"interrupted", []any{map[string]any{"id": "i1", "value": "q1"}}, 1},
		{"task interrupts", "success", `{"values":{},"next":["n"],"tasks":[{"id":"t","name":"n","interrupts":[{"value":"q2"}]},{"id":"u","name":"m","interrupts":[{"value":"q3"}]}]}`,
			"interrupted", []any{map[string]any{"value": "q2"}, map[string]any{"value": "q3"}}, 1},
		{"no interrupts", "success", `{"values":{"messages":[]},"next":[],"tasks":[]}`, "success", nil, 1},
		{"state unreadable: the status stands", "success", "", "success", nil, 1},
		{"not success: state unread", "error", `{"interrupts":[{"value":"q"}]}`, "error", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			f.mux.HandleFunc(runPattern, func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, 200, map[string]any{"status": c.status})
			})
			f.mux.HandleFunc(joinPattern, func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, 200, map[string]any{})
			})
			f.mux.HandleFunc(statePattern, func(w http.ResponseWriter, _ *http.Request) {
				if c.state == "" {
					writeJSON(w, 500, map[string]any{"detail": "down"})
					return
				}
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(c.state))
			})
			h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL, MaxRetries: -1})
			tid, rid := uuid.NewString(), uuid.NewString()
			ran, err := h.Run(t.Context(), tid, rid)
			if err != nil {
				t.Fatal(err)
			}
			waited, err := h.Wait(t.Context(), tid, rid)
			if err != nil {
				t.Fatal(err)
			}
			for _, info := range []asynctasks.RunInfo{ran, waited} {
				if info.Status != c.wantStatus || !reflect.DeepEqual(info.Interrupts, c.want) {
					t.Fatalf("info = %+v; want %s %v", info, c.wantStatus, c.want)
				}
			}
			if got := f.count(statePattern); got != 2*c.stateHits {
				t.Fatalf("state read %d times; want %d", got, 2*c.stateHits)
			}
		})
	}
}

func TestHTTPRunErrorText(t *testing.T) {
	cases := []struct {
		err  any
		want string
	}{
		{"boom", "boom"},
		{map[string]any{"error": "ValueError", "message": "bad input"}, "bad input"},
		{map[string]any{"error": "ValueError"}, "ValueError"},
		{map[string]any{"code": 7}, `{"code":7}`},
		{nil, ""},
	}
	for _, c := range cases {
		f := newFake(t)
		f.mux.HandleFunc(runPattern, func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, map[string]any{"status": "error", "error": c.err})
		})
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL})
		info, err := h.Run(t.Context(), uuid.NewString(), uuid.NewString())
		if err != nil || info.Status != asynctasks.StatusError || info.Error != c.want {
			t.Errorf("error %#v: Run = %+v, %v; want text %q", c.err, info, err, c.want)
		}
	}
}

func TestHTTPErrors(t *testing.T) {
	f := newFake(t)
	rid := uuid.NewString()
	f.mux.HandleFunc(runPattern, func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 404, map[string]any{"detail": "run " + rid + " not found", "message": "ignored"})
	})
	f.mux.HandleFunc(statePattern, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(500)
		_, _ = w.Write([]byte("oops\n"))
	})
	f.mux.HandleFunc("POST /threads/{t}/runs", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 409, map[string]any{"message": "thread is busy"})
	})
	f.mux.HandleFunc("POST /threads/{t}/runs/{r}/cancel", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(403)
	})
	f.mux.HandleFunc("POST /threads", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"thread_id": "not-a-uuid"})
	})
	h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL, MaxRetries: -1})
	ctx := t.Context()
	tid := uuid.NewString()

	check := func(what string, err error, text string, kind error) {
		t.Helper()
		if err == nil || err.Error() != text {
			t.Errorf("%s: %v; want %q", what, err, text)
		}
		if !errors.Is(err, kind) {
			t.Errorf("%s: %v is not %v", what, err, kind)
		}
		if kind != asynctasks.ErrUnavailable && errors.Is(err, asynctasks.ErrUnavailable) {
			t.Errorf("%s: %v must not be ErrUnavailable", what, err)
		}
	}
	_, err := h.Run(ctx, tid, rid)
	check("Run", err, "HTTP 404: run "+rid+" not found", errdefs.ErrNotFound)
	var he *asynctasks.HTTPError
	if !errors.As(err, &he) || he.Code != 404 {
		t.Errorf("Run: %v is not an *HTTPError 404", err)
	}
	_, err = h.LastMessage(ctx, tid)
	check("LastMessage", err, "HTTP 500: oops", asynctasks.ErrUnavailable)
	_, err = h.Update(ctx, tid, "g", "hi")
	check("Update", err, "HTTP 409: thread is busy", errdefs.ErrConflict)
	err = h.Cancel(ctx, tid, rid)
	check("Cancel", err, "HTTP 403: Forbidden", errdefs.ErrUnauthorized)
	if _, _, err := h.Start(ctx, "g", "hi"); err == nil || !strings.Contains(err.Error(), "not-a-uuid") {
		t.Errorf("Start with a bad thread id from the server: %v", err)
	}

	// A server that is not there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()
	down := newHTTP(t, asynctasks.HTTPConfig{URL: gone, MaxRetries: 1})
	if _, _, err := down.Start(ctx, "g", "hi"); !errors.Is(err, asynctasks.ErrUnavailable) {
		t.Errorf("Start against a closed port: %v; want ErrUnavailable", err)
	}
	if _, err := down.Run(ctx, tid, rid); !errors.Is(err, asynctasks.ErrUnavailable) {
		t.Errorf("Run against a closed port: %v; want ErrUnavailable", err)
	}
}

func TestNewHTTPValidatesURL(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:2024", "ftp://127.0.0.1/", "http://", "http://[::1"} {
		if _, err := asynctasks.NewHTTP(asynctasks.HTTPConfig{URL: u}); err == nil {
			t.Errorf("NewHTTP(%q) succeeded", u)
		}
	}
	if _, err := asynctasks.NewHTTP(asynctasks.HTTPConfig{URL: "http://127.0.0.1:2024/prefix"}); err != nil {
		t.Errorf("NewHTTP with a path prefix: %v", err)
	}
}

func TestHTTPPathPrefix(t *testing.T) {
	f := newFake(t)
	f.mux.HandleFunc("GET /api/threads/{t}/runs/{r}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"status": "running"})
	})
	h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL + "/api"})
	if info, err := h.Run(t.Context(), uuid.NewString(), uuid.NewString()); err != nil || info.Status != "running" {
		t.Fatalf("Run under /api = %+v, %v", info, err)
	}
}

func TestHTTPHeaders(t *testing.T) {
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	cases := []struct {
		name    string
		headers map[string]string
		getenv  func(string) string
		want    map[string]string // "" means absent
	}{
		{"defaults, no key", nil, env(nil),
			map[string]string{"X-Auth-Scheme": "langsmith", "X-Api-Key": ""}},
		{"LANGGRAPH_API_KEY first", nil, env(map[string]string{"LANGGRAPH_API_KEY": "lg", "LANGSMITH_API_KEY": "ls", "LANGCHAIN_API_KEY": "lc"}),
			map[string]string{"X-Api-Key": "lg"}},
		{"then LANGSMITH_API_KEY", nil, env(map[string]string{"LANGGRAPH_API_KEY": "", "LANGSMITH_API_KEY": "ls", "LANGCHAIN_API_KEY": "lc"}),
			map[string]string{"X-Api-Key": "ls"}},
		{"then LANGCHAIN_API_KEY, quotes stripped", nil, env(map[string]string{"LANGCHAIN_API_KEY": `"lc"`}),
			map[string]string{"X-Api-Key": "lc"}},
		{"spec headers win, any case", map[string]string{"x-AUTH-scheme": "custom", "X-API-KEY": "mine", "Authorization": "Bearer t", "x-tenant": "acme"},
			env(map[string]string{"LANGGRAPH_API_KEY": "lg"}),
			map[string]string{"X-Auth-Scheme": "custom", "X-Api-Key": "mine", "Authorization": "Bearer t", "X-Tenant": "acme"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			f.answerStart()
			f.mux.HandleFunc(runPattern, func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, 200, map[string]any{"status": "success"})
			})
			f.mux.HandleFunc(statePattern, func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, 200, map[string]any{"values": map[string]any{}})
			})
			f.mux.HandleFunc(joinPattern, func(w http.ResponseWriter, _ *http.Request) {
				writeJSON(w, 200, map[string]any{})
			})
			f.mux.HandleFunc("POST /threads/{t}/runs/{r}/cancel", func(w http.ResponseWriter, r *http.Request) {
				if q := r.URL.Query(); q.Get("wait") != "0" || q.Get("action") != "interrupt" {
					t.Errorf("cancel query %q", r.URL.RawQuery)
				}
				w.WriteHeader(http.StatusNoContent)
			})
			h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL, Headers: c.headers, Getenv: c.getenv})
			ctx := t.Context()
			tid, rid, err := h.Start(ctx, "g", "hi")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Wait(ctx, tid, rid); err != nil {
				t.Fatal(err)
			}
			if err := h.Cancel(ctx, tid, rid); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			seen := f.headers
			f.mu.Unlock()
			if len(seen) != 6 { // 2 POSTs, join, run, state, cancel
				t.Fatalf("%d requests; want 6", len(seen))
			}
			for i, hd := range seen {
				for k, v := range c.want {
					if got := hd.Get(k); got != v {
						t.Errorf("request %d: %s = %q; want %q", i, k, got, v)
					}
					if len(hd.Values(k)) > 1 {
						t.Errorf("request %d: %s sent twice: %q", i, k, hd.Values(k))
					}
				}
			}
		})
	}
}

func TestHTTPHeadersFromProcessEnv(t *testing.T) {
	t.Setenv("LANGGRAPH_API_KEY", "")
	t.Setenv("LANGSMITH_API_KEY", "from-env")
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("x-api-key"))
		writeJSON(w, 200, map[string]any{"status": "running"})
	}))
	t.Cleanup(srv.Close)
	h, err := asynctasks.NewHTTP(asynctasks.HTTPConfig{URL: srv.URL}) // Getenv nil: os.Getenv
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Run(t.Context(), uuid.NewString(), uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	if got.Load() != "from-env" {
		t.Fatalf("x-api-key = %v", got.Load())
	}
}

func TestHTTPRetries(t *testing.T) {
	ctx := t.Context()

	t.Run("GET retried on 503 and 429", func(t *testing.T) {
		f := newFake(t)
		var n atomic.Int32
		f.mux.HandleFunc(runPattern, func(w http.ResponseWriter, _ *http.Request) {
			switch n.Add(1) {
			case 1:
				writeJSON(w, 503, map[string]any{"detail": "busy"})
			case 2:
				writeJSON(w, 429, map[string]any{"detail": "slow down"})
			default:
				writeJSON(w, 200, map[string]any{"status": "running"})
			}
		})
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL})
		if info, err := h.Run(ctx, uuid.NewString(), uuid.NewString()); err != nil || info.Status != "running" {
			t.Fatalf("Run = %+v, %v", info, err)
		}
		if got := f.count(runPattern); got != 3 {
			t.Fatalf("%d attempts; want 3", got)
		}
	})

	t.Run("GET gives up after MaxRetries", func(t *testing.T) {
		f := newFake(t)
		f.mux.HandleFunc(statePattern, func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 502, map[string]any{"detail": "bad gateway"})
		})
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL, MaxRetries: 2})
		_, err := h.LastMessage(ctx, uuid.NewString())
		if !errors.Is(err, asynctasks.ErrUnavailable) || err.Error() != "HTTP 502: bad gateway" {
			t.Fatalf("LastMessage: %v", err)
		}
		if got := f.count(statePattern); got != 3 {
			t.Fatalf("%d attempts; want 3", got)
		}
	})

	t.Run("GET not retried on 4xx", func(t *testing.T) {
		f := newFake(t)
		f.mux.HandleFunc(runPattern, func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 404, map[string]any{"detail": "Run not found"})
		})
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL})
		if _, err := h.Run(ctx, uuid.NewString(), uuid.NewString()); !errors.Is(err, errdefs.ErrNotFound) {
			t.Fatalf("Run: %v", err)
		}
		if got := f.count(runPattern); got != 1 {
			t.Fatalf("%d attempts; want 1", got)
		}
	})

	t.Run("POST not retried on 503", func(t *testing.T) {
		f := newFake(t)
		f.mux.HandleFunc("POST /threads", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 503, map[string]any{"detail": "overloaded"})
		})
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL})
		_, _, err := h.Start(ctx, "g", "hi")
		if !errors.Is(err, asynctasks.ErrUnavailable) || err.Error() != "HTTP 503: overloaded" {
			t.Fatalf("Start: %v", err)
		}
		if got := f.count("POST /threads"); got != 1 {
			t.Fatalf("%d attempts; want 1", got)
		}
	})

	t.Run("dropped connection: GET retried, POST not", func(t *testing.T) {
		f := newFake(t)
		var gets atomic.Int32
		f.mux.HandleFunc(runPattern, func(w http.ResponseWriter, _ *http.Request) {
			if gets.Add(1) == 1 {
				panic(http.ErrAbortHandler) // the connection drops, no answer
			}
			writeJSON(w, 200, map[string]any{"status": "running"})
		})
		f.mux.HandleFunc("POST /threads/{t}/runs/{r}/cancel", func(http.ResponseWriter, *http.Request) {
			panic(http.ErrAbortHandler)
		})
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL})
		if info, err := h.Run(ctx, uuid.NewString(), uuid.NewString()); err != nil || info.Status != "running" {
			t.Fatalf("Run = %+v, %v", info, err)
		}
		if got := f.count(runPattern); got != 2 {
			t.Fatalf("GET: %d attempts; want 2", got)
		}
		if err := h.Cancel(ctx, uuid.NewString(), uuid.NewString()); !errors.Is(err, asynctasks.ErrUnavailable) {
			t.Fatalf("Cancel: %v; want ErrUnavailable", err)
		}
		if got := f.count("POST /threads/{t}/runs/{r}/cancel"); got != 1 {
			t.Fatalf("POST: %d attempts; want 1", got)
		}
	})

	t.Run("POST retried when the connection failed before sending", func(t *testing.T) {
		f := newFake(t)
		f.answerStart()
		var dials atomic.Int32
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) <= 2 {
				return nil, errors.New("dial refused by the test")
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
		t.Cleanup(tr.CloseIdleConnections)
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL, HTTPClient: &http.Client{Transport: tr}})
		if _, _, err := h.Start(ctx, "g", "hi"); err != nil {
			t.Fatal(err)
		}
		if got := f.count("POST /threads"); got != 1 {
			t.Fatalf("POST /threads reached the server %d times; want 1", got)
		}
		if got := dials.Load(); got < 3 {
			t.Fatalf("%d dials; want at least 3", got)
		}
	})

	t.Run("per-request timeout: GET retried, POST not", func(t *testing.T) {
		f := newFake(t)
		hang := func(_ http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // so that the server notices the client leave
			<-r.Context().Done()
		}
		f.mux.HandleFunc(runPattern, hang)
		f.mux.HandleFunc("POST /threads", hang)
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL, Timeout: 250 * time.Millisecond, MaxRetries: 1})
		if _, err := h.Run(ctx, uuid.NewString(), uuid.NewString()); !errors.Is(err, asynctasks.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Run: %v; want ErrUnavailable and DeadlineExceeded", err)
		}
		if _, _, err := h.Start(ctx, "g", "hi"); !errors.Is(err, asynctasks.ErrUnavailable) {
			t.Fatalf("Start: %v; want ErrUnavailable", err)
		}
		testutil.Eventually(t, 15*time.Second, "requests counted", func() bool {
			return f.count(runPattern) == 2 && f.count("POST /threads") == 1
		})
	})
}

func TestHTTPWait(t *testing.T) {
	ctx := t.Context()
	success := func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"status": "success"})
	}
	emptyState := func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]any{"values": map[string]any{}})
	}
	flush := func(w http.ResponseWriter, s string) {
		_, _ = w.Write([]byte(s))
		_ = http.NewResponseController(w).Flush()
	}

	t.Run("keep-alive whitespace, a drop, then a re-join", func(t *testing.T) {
		f := newFake(t)
		var joins atomic.Int32
		f.mux.HandleFunc(joinPattern, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			flush(w, "\n")
			switch joins.Add(1) {
			case 1:
				panic(http.ErrAbortHandler) // dropped mid-body
			case 2:
				return // 200 with whitespace only: ended before the run did
			}
			flush(w, "\n\n")
			flush(w, `{"messages":[]}`)
		})
		f.mux.HandleFunc(runPattern, success)
		f.mux.HandleFunc(statePattern, emptyState)
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL, MaxRetries: 1})
		info, err := h.Wait(ctx, uuid.NewString(), uuid.NewString())
		if err != nil || info.Status != asynctasks.StatusSuccess {
			t.Fatalf("Wait = %+v, %v", info, err)
		}
		// MaxRetries 1 allows one failure in a row without progress; these
		// drops came after keep-alive bytes, so they do not count.
		if got := joins.Load(); got != 3 {
			t.Fatalf("%d joins; want 3", got)
		}
	})

	t.Run("re-joins are bounded", func(t *testing.T) {
		f := newFake(t)
		f.mux.HandleFunc(joinPattern, func(http.ResponseWriter, *http.Request) {
			panic(http.ErrAbortHandler) // nothing sent
		})
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL, MaxRetries: 2})
		if _, err := h.Wait(ctx, uuid.NewString(), uuid.NewString()); !errors.Is(err, asynctasks.ErrUnavailable) {
			t.Fatalf("Wait: %v; want ErrUnavailable", err)
		}
		if got := f.count(joinPattern); got != 3 {
			t.Fatalf("%d joins; want 3", got)
		}
	})

	t.Run("5xx join retried, 404 not", func(t *testing.T) {
		f := newFake(t)
		var joins atomic.Int32
		missing := uuid.NewString()
		f.mux.HandleFunc(joinPattern, func(w http.ResponseWriter, r *http.Request) {
			if r.PathValue("r") == missing {
				writeJSON(w, 404, map[string]any{"detail": "run not found"})
				return
			}
			if joins.Add(1) == 1 {
				writeJSON(w, 503, map[string]any{"detail": "restarting"})
				return
			}
			writeJSON(w, 200, map[string]any{})
		})
		f.mux.HandleFunc(runPattern, success)
		f.mux.HandleFunc(statePattern, emptyState)
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL})
		if info, err := h.Wait(ctx, uuid.NewString(), uuid.NewString()); err != nil || info.Status != asynctasks.StatusSuccess {
			t.Fatalf("Wait = %+v, %v", info, err)
		}
		_, err := h.Wait(ctx, uuid.NewString(), missing)
		if !errors.Is(err, errdefs.ErrNotFound) || err.Error() != "HTTP 404: run not found" {
			t.Fatalf("Wait of a missing run: %v", err)
		}
		if got := f.count(joinPattern); got != 3 {
			t.Fatalf("%d joins; want 3", got)
		}
	})

	t.Run("an __error__ body reports the run's error", func(t *testing.T) {
		f := newFake(t)
		f.mux.HandleFunc(joinPattern, func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, map[string]any{"__error__": map[string]any{"error": "RuntimeError", "message": "boom"}})
		})
		f.mux.HandleFunc(runPattern, func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, 200, map[string]any{"status": "error", "error": "boom"})
		})
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL})
		info, err := h.Wait(ctx, uuid.NewString(), uuid.NewString())
		if err != nil || !reflect.DeepEqual(info, asynctasks.RunInfo{Status: asynctasks.StatusError, Error: "boom"}) {
			t.Fatalf("Wait = %+v, %v", info, err)
		}
	})

	t.Run("the join outlives the per-request timeout", func(t *testing.T) {
		f := newFake(t)
		joined, release := make(chan struct{}), make(chan struct{})
		slow := uuid.NewString()
		f.mux.HandleFunc(joinPattern, func(w http.ResponseWriter, r *http.Request) {
			flush(w, "\n")
			close(joined)
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			flush(w, "{}")
		})
		f.mux.HandleFunc(runPattern, func(w http.ResponseWriter, r *http.Request) {
			if r.PathValue("r") == slow {
				<-r.Context().Done()
				return
			}
			success(w, r)
		})
		f.mux.HandleFunc(statePattern, emptyState)
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL, Timeout: 250 * time.Millisecond, MaxRetries: -1,
			HTTPClient: &http.Client{Timeout: 250 * time.Millisecond}})
		done := make(chan error, 1)
		go func() {
			info, err := h.Wait(ctx, uuid.NewString(), uuid.NewString())
			if err == nil && info.Status != asynctasks.StatusSuccess {
				err = fmt.Errorf("status %q", info.Status)
			}
			done <- err
		}()
		<-joined
		// A plain request times out meanwhile…
		if _, err := h.Run(ctx, uuid.NewString(), slow); !errors.Is(err, asynctasks.ErrUnavailable) {
			t.Fatalf("Run of the slow run: %v; want a timeout", err)
		}
		// …but the join, older than that, is still there.
		close(release)
		if err := <-done; err != nil {
			t.Fatalf("Wait: %v", err)
		}
	})

	t.Run("ctx ends the wait", func(t *testing.T) {
		f := newFake(t)
		joined := make(chan struct{})
		f.mux.HandleFunc(joinPattern, func(w http.ResponseWriter, r *http.Request) {
			flush(w, "\n")
			close(joined)
			<-r.Context().Done()
		})
		h := newHTTP(t, asynctasks.HTTPConfig{URL: f.URL})
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := h.Wait(wctx, uuid.NewString(), uuid.NewString())
			done <- err
		}()
		<-joined
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Wait: %v; want context.Canceled", err)
		}
	})
}
