package asynctasks_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/uuid"

	"agentserver/internal/asynctasks"
	"agentserver/internal/errdefs"
	"agentserver/internal/testutil"
)

// a2aByGraph holds the A2A transport to the contract: an A2A transport
// speaks to one agent (one assistant), while the contract starts several
// graphs, so this test glue keeps one transport per graph and remembers
// which one each task and context went through.
type a2aByGraph struct {
	t    *testing.T
	base string

	mu       sync.Mutex
	byGraph  map[string]*asynctasks.A2A
	byRun    map[string]*asynctasks.A2A
	byThread map[string]*asynctasks.A2A
}

func newA2AByGraph(t *testing.T, base string) *a2aByGraph {
	return &a2aByGraph{t: t, base: base, byGraph: map[string]*asynctasks.A2A{}, byRun: map[string]*asynctasks.A2A{}, byThread: map[string]*asynctasks.A2A{}}
}

func (w *a2aByGraph) graph(id string) *asynctasks.A2A {
	w.mu.Lock()
	defer w.mu.Unlock()
	if x, ok := w.byGraph[id]; ok {
		return x
	}
	x, err := asynctasks.NewA2A(asynctasks.HTTPConfig{URL: w.base + "/a2a/" + id, Getenv: noEnv})
	if err != nil {
		w.t.Fatal(err)
	}
	w.byGraph[id] = x
	return x
}

func (w *a2aByGraph) record(x *asynctasks.A2A, tid, rid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.byThread[tid], w.byRun[rid] = x, x
}

// of returns the transport recorded under key, else the echo agent's.
func (w *a2aByGraph) of(m map[string]*asynctasks.A2A, key string) *asynctasks.A2A {
	w.mu.Lock()
	x := m[key]
	w.mu.Unlock()
	if x == nil {
		return w.graph("echo")
	}
	return x
}

func (w *a2aByGraph) Start(ctx context.Context, graphID, message string) (string, string, error) {
	x := w.graph(graphID)
	tid, rid, err := x.Start(ctx, graphID, message)
	if err == nil {
		w.record(x, tid, rid)
	}
	return tid, rid, err
}

func (w *a2aByGraph) Update(ctx context.Context, threadID, graphID, message string) (string, error) {
	x := w.graph(graphID)
	rid, err := x.Update(ctx, threadID, graphID, message)
	if err == nil {
		w.record(x, threadID, rid)
	}
	return rid, err
}

func (w *a2aByGraph) Run(ctx context.Context, threadID, runID string) (asynctasks.RunInfo, error) {
	return w.of(w.byRun, runID).Run(ctx, threadID, runID)
}

func (w *a2aByGraph) LastMessage(ctx context.Context, threadID string) (any, error) {
	return w.of(w.byThread, threadID).LastMessage(ctx, threadID)
}

func (w *a2aByGraph) Cancel(ctx context.Context, threadID, runID string) error {
	return w.of(w.byRun, runID).Cancel(ctx, threadID, runID)
}

func (w *a2aByGraph) Wait(ctx context.Context, threadID, runID string) (asynctasks.RunInfo, error) {
	return w.of(w.byRun, runID).Wait(ctx, threadID, runID)
}

// TestA2ATransportContract holds the A2A transport to the contract of
// Local and HTTP, against this server's A2A endpoint.
func TestA2ATransportContract(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: contractGraphs})
	x := newA2AByGraph(t, s.URL())
	for _, c := range contractCases {
		t.Run(c.name, func(t *testing.T) { c.run(t, s, x, t.Name()+"-"+uuid.NewString()) })
	}
}

func TestNewA2AValidatesURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x/a2a", "http://", "::"} {
		if _, err := asynctasks.NewA2A(asynctasks.HTTPConfig{URL: u}); err == nil {
			t.Errorf("NewA2A accepted %q", u)
		}
	}
}

func TestA2AAPIKey(t *testing.T) {
	s := testutil.StartServer(t, testutil.Options{Graphs: contractGraphs, APIKey: "secret"})
	url := s.URL() + "/a2a/echo"
	without, err := asynctasks.NewA2A(asynctasks.HTTPConfig{URL: url, Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := without.Start(t.Context(), "", "hi"); !errors.Is(err, errdefs.ErrUnauthorized) {
		t.Fatalf("Start without a key: %v; want unauthorized", err)
	}
	with, err := asynctasks.NewA2A(asynctasks.HTTPConfig{URL: url, Getenv: func(k string) string {
		if k == "LANGGRAPH_API_KEY" {
			return "secret"
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	tid, rid, err := with.Start(t.Context(), "", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if info, err := with.Wait(t.Context(), tid, rid); err != nil || info.Status != asynctasks.StatusSuccess {
		t.Fatalf("Wait = %+v, %v", info, err)
	}
}
