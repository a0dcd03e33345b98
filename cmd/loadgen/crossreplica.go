package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"agentserver/internal/llm/scripted"
)

// crossReplicaScenario joins, on one replica, the stream of a run created on
// another.
const crossReplicaScenario = "cross-replica-first-event"

// Target of crossReplicaScenario: create returned on A -> first event on B.
const targetCrossFirstEventP99 = 50 * time.Millisecond

// The runs of crossReplicaScenario are those of a model agent whose model
// (a scripted one in loadgen) streams its answer in crossDeltas deltas
// crossDelta apart, so that every run stays live for about
// (crossDeltas-1)*crossDelta after its model call starts: long enough for
// the join on the other replica to find it running.
const (
	crossDeltas = 5
	crossDelta  = 25 * time.Millisecond
	crossAnswer = "one two three four five"
	crossGraph  = "slow"
	crossSpec   = "name: slow\nmodel: loadgen-model\nsystem_prompt: Answer.\ntools: []\n"
	crossGraphs = `{"graphs": {"echo": "builtin:echo", "slow": "./slow.yaml"}}` + "\n"
)

// crossRunBody creates a resumable run of the slow agent.
var crossRunBody = []byte(`{"assistant_id":"` + crossGraph + `","input":` + echoInput + `,"stream_resumable":true}`)

// crossServer starts the replicas of crossReplicaScenario, once: a group of
// their own, with a langgraph.json that adds the slow agent and the
// environment that points its model at a scripted model server in loadgen.
func (r *runner) crossServer() (*target, error) {
	if r.crossSrv != nil {
		return r.crossSrv, nil
	}
	llm, err := scripted.Start("127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("scripted model server: %w", err)
	}
	r.llm = llm
	llm.SetResponder(func(scripted.ChatRequest) scripted.Step {
		return scripted.Text(crossAnswer).Split(crossDeltas).WithLatency(0, crossDelta)
	})
	dir := filepath.Join(r.tmp, "cross-config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "slow.yaml"), []byte(crossSpec), 0o644); err != nil {
		return nil, err
	}
	o := r.opts
	o.configFile = filepath.Join(dir, "langgraph.json")
	if err := os.WriteFile(o.configFile, []byte(crossGraphs), 0o644); err != nil {
		return nil, err
	}
	o.serverEnv = append(o.serverEnv, "OPENAI_BASE_URL="+llm.URL(), "OPENAI_API_KEY=loadgen")
	t, err := startTarget(r.ctx, o, r.tmp, "cross", r.client)
	if err != nil {
		return nil, err
	}
	r.crossSrv = t
	return t, nil
}

// crossSample is one measured run of crossReplicaScenario.
type crossSample struct {
	first, second, whole time.Duration
	status               string
	events               int
}

// crossReplicaFirstEvent creates run i on replica i mod N (POST
// /threads/{t}/runs, resumable) and, as soon as that returns, joins its
// stream from the start on the next replica (GET
// /threads/{t}/runs/{r}/stream with Last-Event-ID: -1). It measures, from
// the create's return, the first event the joining replica delivers (the
// run's own metadata event, relayed from the executing replica: with
// Last-Event-ID the joining replica sends no preface of its own), the
// second (the run's first values), and the end of the stream.
func (r *runner) crossReplicaFirstEvent() error {
	t, err := r.crossServer()
	if err != nil {
		return err
	}
	o := r.opts
	s := crossReplicaScenario
	warm := min(o.warmup, 20)
	ids, err := r.makeThreads(t, warm+o.crossN, s)
	if err != nil {
		return err
	}
	n := 1 + len(t.peers)
	samples := make([]crossSample, 0, o.crossN)
	fn := func(off int, keep bool) func(ctx context.Context, i int) (time.Duration, error) {
		return func(ctx context.Context, i int) (time.Duration, error) {
			k := off + i
			c, err := r.crossOne(ctx, t.base(k), t.base(k+1), ids[k])
			if err != nil {
				return 0, err
			}
			if keep {
				samples = append(samples, c)
			}
			return c.first, nil
		}
	}
	if w := loopTimed(r.ctx, 1, warm, o.duration, fn(0, false)); w.firstErr != nil {
		return fmt.Errorf("warm-up: %w", w.firstErr)
	}
	res := loopTimed(r.ctx, 1, o.crossN, o.duration, fn(warm, true))
	var second, whole []time.Duration
	statuses := map[string]int{}
	var counts eventCounts
	for _, c := range samples {
		second = append(second, c.second)
		whole = append(whole, c.whole)
		statuses[c.status]++
		counts.add(c.events)
	}
	ss := summarize(second, 0, res.wall, res.capped)
	ws := summarize(whole, 0, res.wall, res.capped)
	fmt.Printf("[%s] %d replicas; run created on replica i, joined on replica i+1 (mod %d); model answer %d deltas %s apart\n", s, n, n, crossDeltas, crossDelta)
	fmt.Printf("[%s] create returned -> first event on the other replica (metadata): %s\n", s, res.stats)
	fmt.Printf("[%s] create returned -> second event (first values): %s\n", s, ss)
	fmt.Printf("[%s] create returned -> end of the joined stream: %s\n", s, ws)
	fmt.Printf("[%s] status in the create response: %v; events per joined stream: %s\n", s, statuses, &counts)
	r.report.addDur(s, "p50 create returned -> first event on B", res.p50, 0)
	r.report.addDur(s, "p90", res.p90, 0)
	r.report.addDur(s, "p99", res.p99, targetCrossFirstEventP99)
	r.report.addDur(s, "max", res.pmax, 0)
	r.report.add(s, "p50 / p99 to the second event (values)", ms(ss.p50)+" / "+ms(ss.p99), "", "")
	r.report.add(s, "p50 / p99 to the end of the joined stream", ms(ws.p50)+" / "+ms(ws.p99), "", "")
	r.report.add(s, "events per joined stream", counts.String(), "", "")
	return res.err(o.crossN)
}

// crossOne creates one run on the replica at a and joins it on the one at b.
func (r *runner) crossOne(ctx context.Context, a, b, threadID string) (crossSample, error) {
	runs := a + "/threads/" + threadID + "/runs"
	created, err := do(ctx, r.client, http.MethodPost, runs, crossRunBody, true)
	t0 := time.Now()
	if err != nil {
		return crossSample{}, err
	}
	var rv struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal(created.body, &rv); err != nil || rv.RunID == "" {
		return crossSample{}, fmt.Errorf("POST %s: no run_id in %.200s", runs, created.body)
	}
	u := b + "/threads/" + threadID + "/runs/" + rv.RunID + "/stream"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return crossSample{}, err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", "-1")
	resp, err := r.client.Do(req)
	if err != nil {
		return crossSample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b := make([]byte, 300)
		k, _ := resp.Body.Read(b)
		return crossSample{}, fmt.Errorf("GET %s: status %d: %s", u, resp.StatusCode, b[:k])
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return crossSample{}, fmt.Errorf("GET %s: Content-Type %q", u, ct)
	}
	sum, err := readStream(resp.Body, t0)
	whole := time.Since(t0)
	if err != nil {
		return crossSample{}, fmt.Errorf("GET %s: %w", u, err)
	}
	switch {
	case sum.errorData != nil:
		return crossSample{}, fmt.Errorf("GET %s: error event: %.300s", u, sum.errorData)
	case sum.events < 3 || sum.first != "metadata" || sum.second != "values":
		return crossSample{}, fmt.Errorf("GET %s: %d events, first %q, second %q, last %q; want metadata, values, …", u, sum.events, sum.first, sum.second, sum.last)
	}
	return crossSample{first: sum.firstAt, second: sum.secondAt, whole: whole, status: rv.Status, events: sum.events}, nil
}
