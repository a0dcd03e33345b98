package runs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
	"agentserver/internal/testutil/pgtest"
)

// replicaLease is the run lease of the replica tests: short, so that a
// takeover happens within the tests' deadlines.
const replicaLease = 2 * time.Second

// startReplicas starts n servers sharing one PostgreSQL schema, each with
// its own data directory; jobs bounds each one's workers (0: the default).
func startReplicas(t *testing.T, n, jobs int) []*testutil.Server {
	rs, _ := startReplicasOn(t, n, jobs)
	return rs
}

// startReplicasOn is startReplicas that also returns the database URL.
func startReplicasOn(t *testing.T, n, jobs int) ([]*testutil.Server, string) {
	t.Helper()
	if !pgtest.Enabled() {
		t.Skip("replicas share a PostgreSQL database: " + pgtest.EnvURL + " is not set")
	}
	first := t.TempDir()
	out := make([]*testutil.Server, n)
	for i := range out {
		opts := testutil.Options{Graphs: testutil.TestGraphs, DataDir: t.TempDir(), Jobs: jobs, RunLease: replicaLease}
		if i == 0 {
			opts.DataDir = first
		} else {
			opts.ReplicaOf = first
		}
		out[i] = testutil.StartServer(t, opts)
	}
	return out, testutil.DatabaseURL(t, first)
}

// gatedRun creates a run of the gated graph on s and waits until its node
// blocks at gate.
func gatedRun(t *testing.T, s *testutil.Server, tid, gate string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate, "messages": []any{map[string]any{"role": "user", "content": "go"}}}}
	for k, v := range extra {
		body[k] = v
	}
	rid := s.Must(200, "POST", "/threads/"+tid+"/runs", body).Object(t)["run_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := testutil.AwaitWaiters(ctx, gate, 1); err != nil {
		t.Fatal(err)
	}
	return rid
}

// gatedPair is two replicas on one schema and a run of the gated graph
// that replica a executes, blocked at its gate until the test ends.
type gatedPair struct {
	a, b           *testutil.Server
	url            string
	tid, gate, rid string
}

// startGatedPair starts a gatedPair; name tells the test's gate apart.
func startGatedPair(t *testing.T, name string) gatedPair {
	t.Helper()
	rs, url := startReplicasOn(t, 2, 0)
	p := gatedPair{a: rs[0], b: rs[1], url: url}
	p.tid = testutil.NewThread(t, p.a)
	p.gate = "replicas-" + name + "-" + p.tid
	t.Cleanup(func() { testutil.Release(p.gate) })
	p.rid = gatedRun(t, p.a, p.tid, p.gate, nil)
	return p
}

// readEvents reads SSE events from resp until one named last (or the end).
func readEvents(t *testing.T, resp *http.Response, last string) []testutil.SSEEvent {
	t.Helper()
	r := testutil.NewSSEReader(resp.Body)
	var out []testutil.SSEEvent
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read stream: %v (after %d events)", err, len(out))
		}
		out = append(out, ev)
		if ev.Event == last {
			return out
		}
	}
}

func joinNames(evs []testutil.SSEEvent) string {
	names := make([]string, len(evs))
	for i, ev := range evs {
		names[i] = ev.Event
	}
	return strings.Join(names, ",")
}

// A run executing on replica A is joined, streamed (with Last-Event-ID),
// waited for and listed from replica B.
func TestReplicasJoinStreamAndWaitAcrossReplicas(t *testing.T) {
	rs := startReplicas(t, 2, 0)
	a, b := rs[0], rs[1]
	tid := testutil.NewThread(t, a)
	gate := "replicas-join-" + tid
	rid := gatedRun(t, a, tid, gate, map[string]any{"stream_resumable": true, "stream_mode": []string{"values", "custom"}})
	path := "/threads/" + tid + "/runs/" + rid

	// From the start, as B sees it: the metadata and the waiting event.
	all := b.Stream("GET", path+"/stream", nil, http.Header{"Last-Event-ID": {"-1"}})
	defer all.Body.Close()
	head := readEvents(t, all, "custom")
	if head[0].Event != "metadata" || head[len(head)-1].Event != "custom" || head[0].ID == "" {
		t.Fatalf("B streamed %s (ids %q…), want metadata first and the custom event, with ids", joinNames(head), head[0].ID)
	}
	// A reconnect to B after the custom event starts after it.
	lastID := head[len(head)-1].ID
	resumed := b.Stream("GET", path+"/stream", nil, http.Header{"Last-Event-ID": {lastID}})
	defer resumed.Body.Close()

	waited := make(chan testutil.Response, 1)
	go func() { waited <- b.Try("GET", path+"/join", nil) }()
	testutil.Release(gate)

	rest := readEvents(t, all, "end")
	if got := joinNames(rest); !strings.Contains(got, "values") || !strings.HasSuffix(got, "end") {
		t.Fatalf("B's stream went on with %s, want values then end", got)
	}
	after := readEvents(t, resumed, "end")
	for _, ev := range after {
		if ev.ID != "" && ev.ID <= lastID && len(ev.ID) == len(lastID) {
			t.Fatalf("the stream resumed after %s sent event %s again", lastID, ev.ID)
		}
	}
	if got := joinNames(after); strings.Contains(got, "custom") || !strings.Contains(got, "values") {
		t.Fatalf("the resumed stream sent %s, want what followed the custom event only", got)
	}
	select {
	case r := <-waited:
		if r.Status != 200 || !strings.Contains(string(r.Raw), "released "+gate) {
			t.Fatalf("join on B: %d %s", r.Status, r.Raw)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("join on B did not return after the run ended on A")
	}
	run := b.Must(200, "GET", path, nil).Object(t)
	if run["status"] != "success" {
		t.Fatalf("run as B reads it: %v", run)
	}
}

// A client of replica B cancels a run executing on replica A: the run's
// node sees its context end, and the run ends interrupted, once.
func TestReplicasCancelAcrossReplicas(t *testing.T) {
	p := startGatedPair(t, "cancel")
	a, b, tid, rid := p.a, p.b, p.tid, p.rid
	start := time.Now()
	b.Must(204, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel?wait=1", nil)
	took := time.Since(start)
	run := a.Must(200, "GET", "/threads/"+tid+"/runs/"+rid, nil).Object(t)
	if run["status"] != "interrupted" {
		t.Fatalf("run after a cancel from B: %v", run)
	}
	t.Logf("cancel from B to end on A: %v", took)
	if th := b.Must(200, "GET", "/threads/"+tid, nil).Object(t); th["status"] == "busy" {
		t.Fatalf("thread still busy after the cancel: %v", th)
	}
}

// The thread stream of a client on replica B carries the runs that execute
// on replica A.
func TestReplicasThreadStreamRelaysOtherReplicas(t *testing.T) {
	rs := startReplicas(t, 2, 0)
	a, b := rs[0], rs[1]
	tid := testutil.NewThread(t, a)
	stream := b.Stream("GET", "/threads/"+tid+"/stream", nil, nil)
	defer stream.Body.Close()
	// The relay connects to A once B's feed has a client; runs until one
	// is seen, since events before the relay connected are not relayed.
	// The first run may be caught half-way (the relay connected after
	// its values): the stream is read run by run until a whole one.
	got := make(chan []testutil.SSEEvent, 1)
	go func() {
		for {
			evs := readEvents(t, stream, "run_done")
			if len(evs) == 0 || strings.Contains(joinNames(evs), "values") {
				got <- evs
				return
			}
		}
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		a.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("hello")})
		select {
		case evs := <-got:
			if names := joinNames(evs); !strings.Contains(names, "values") {
				t.Fatalf("B's thread stream carried %s, want the run's values", names)
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("B's thread stream carried nothing of the runs on A")
		}
	}
}

// A replica with no free worker leaves a run in the shared queue, and
// another replica executes it; its webhook is sent once.
func TestReplicasShareTheQueue(t *testing.T) {
	var mu sync.Mutex
	hooks := map[string]int{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		hooks[fmt.Sprint(body["run_id"])]++
		mu.Unlock()
	}))
	defer hook.Close()
	rs := startReplicas(t, 2, 1)
	a, b := rs[0], rs[1]
	busy := testutil.NewThread(t, a)
	gate := "replicas-queue-" + busy
	defer testutil.Release(gate)
	gatedRun(t, a, busy, gate, nil) // A's only worker
	tid := testutil.NewThread(t, a)
	r := a.Must(200, "POST", "/threads/"+tid+"/runs/wait", map[string]any{"assistant_id": "echo", "input": testutil.UserInput("queued"), "webhook": hook.URL}).Object(t)
	if !strings.Contains(fmt.Sprint(r["messages"]), "queued") {
		t.Fatalf("a run queued on A while A was busy: %v", r)
	}
	runs := b.Must(200, "GET", "/threads/"+tid+"/runs", nil).List(t)
	if len(runs) != 1 || runs[0].(map[string]any)["status"] != "success" {
		t.Fatalf("runs of the queued thread: %v", runs)
	}
	rid := runs[0].(map[string]any)["run_id"].(string)
	testutil.Eventually(t, 10*time.Second, "webhook of the run B executed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return hooks[rid] >= 1
	})
	mu.Lock()
	defer mu.Unlock()
	if hooks[rid] != 1 {
		t.Fatalf("webhook sent %d times", hooks[rid])
	}
	_ = b
}

// A replica that cannot renew its lease loses its run: another replica
// takes it over with attempt 2 and finishes it, and the thread gets one
// reply.
func TestReplicasTakeOverALapsedLease(t *testing.T) {
	p := startGatedPair(t, "takeover")
	b, url, tid, gate, rid := p.b, p.url, p.tid, p.gate, p.rid
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// As if A had stopped renewing (paused) past its lease: the lease now
	// lies in the past and is no longer A's to renew.
	if _, err := conn.Exec(ctx, `UPDATE run_queue SET owner = 'paused', lease_until = now() - interval '1 hour' WHERE run_id = $1`, rid); err != nil {
		t.Fatal(err)
	}
	key := uuid.MustParse(rid)
	attempt := func() int {
		var n int
		if err := conn.QueryRow(ctx, `SELECT attempt FROM runs WHERE run_id = $1`, key).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	testutil.Eventually(t, 20*time.Second, "run taken over with attempt 2", func() bool { return attempt() == 2 })
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := testutil.AwaitWaiters(wctx, gate, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Release(gate)
	testutil.WaitStatus(t, b, tid, rid, "success")
	replies := 0
	for _, m := range contents(t, b, tid) {
		if strings.HasPrefix(m, "released ") {
			replies++
		}
	}
	if replies != 1 {
		t.Fatalf("thread messages after the takeover: %q, want one reply", contents(t, b, tid))
	}
}

// A replica stopped gracefully hands its running run back to the queue:
// another replica continues it at once.
func TestReplicasGracefulStopHandsRunsOver(t *testing.T) {
	p := startGatedPair(t, "handover")
	a, b, tid, gate, rid := p.a, p.b, p.tid, p.gate, p.rid
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// B's node is the one waiting now.
	if err := testutil.AwaitWaiters(ctx, gate, 1); err != nil {
		t.Fatal(err)
	}
	testutil.Release(gate)
	testutil.WaitStatus(t, b, tid, rid, "success")
	if replies := contents(t, b, tid); len(replies) != 2 || replies[1] != "released "+gate {
		t.Fatalf("thread messages after the handover: %q", replies)
	}
}

// A supervisor delegating with the task tool on replica A is followed and
// cancelled from replica B: B's stream carries the subagent's events, and
// B's cancel reaches the subagent's model call on A.
func TestReplicasTaskToolEventsAndCancel(t *testing.T) {
	if !pgtest.Enabled() {
		t.Skip("replicas share a PostgreSQL database: " + pgtest.EnvURL + " is not set")
	}
	first := t.TempDir()
	var shared testutil.Options
	a, model := testutil.StartAgent(t, "subagents: {}\n", func(o *testutil.Options) {
		o.DataDir, o.RunLease = first, replicaLease
		shared = *o
	})
	shared.DataDir, shared.ReplicaOf = t.TempDir(), first
	b := testutil.StartServer(t, shared)
	model.Script(
		scripted.ToolCalls(scripted.Call("task", map[string]any{"description": "sum", "prompt": "add 2 and 2", "subagent_type": "general-purpose"})),
		scripted.Hang(), // the subagent's model call
	)
	tid := testutil.NewThread(t, a)
	rid := a.Must(200, "POST", "/threads/"+tid+"/runs", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("delegate"),
		"stream_mode": []string{"custom"}, "stream_resumable": true}).Object(t)["run_id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := model.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	stream := b.Stream("GET", "/threads/"+tid+"/runs/"+rid+"/stream", nil, http.Header{"Last-Event-ID": {"-1"}})
	defer stream.Body.Close()
	got := make(chan []testutil.SSEEvent, 1)
	go func() { got <- readEvents(t, stream, "end") }()
	b.Must(202, "POST", "/threads/"+tid+"/runs/"+rid+"/cancel", nil)
	if err := model.WaitDisconnect(ctx); err != nil {
		t.Fatalf("the subagent's model call on A was not cancelled from B: %v", err)
	}
	testutil.WaitStatus(t, b, tid, rid, "interrupted")
	var kinds []string
	select {
	case evs := <-got:
		for _, e := range evs {
			if e.Event == "custom" {
				kinds = append(kinds, fmt.Sprint(e.Data.(map[string]any)["type"]))
			}
		}
	case <-ctx.Done():
		t.Fatal("B's stream did not end with the run")
	}
	if strings.Join(kinds, ",") != "task_started,task_cancelled" {
		t.Fatalf("B's stream carried the task events %v, want the subagent started then cancelled", kinds)
	}
}

// A replica that waits for a run executing on another one learns of its
// end from the database's notices; one that misses the notice (it was not
// sent, or was lost) still answers within the safety poll. The run's
// end is simulated without a notice: its active entry is deleted by hand
// while a join waits for it on the other replica.
func TestReplicaWaiterSurvivesALostEndNotice(t *testing.T) {
	p := startGatedPair(t, "lost-notice")
	b, url, tid, rid := p.b, p.url, p.tid, p.rid

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", b.URL()+"/threads/"+tid+"/runs/"+rid+"/join", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The answer's headers come with the first keep-alive newline, once
	// the join waits for the run's end.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	key := uuid.MustParse(rid)
	if _, err := conn.Exec(ctx, `DELETE FROM kv WHERE bucket = 'runs_active' AND k = $1`, key[:]); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("the join never answered: %v (after %v)", err, time.Since(start))
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(raw))), &body); err != nil {
		t.Fatalf("join answered %q: %v", raw, err)
	}
	t.Logf("the join answered %v after the run's end was committed without a notice", time.Since(start).Round(time.Millisecond))
}
