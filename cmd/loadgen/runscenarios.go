package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"agentserver/internal/retry"
)

// Targets of the run scenarios.
const (
	targetRunWaitC1P50    = 5 * time.Millisecond
	targetRunC50Rate      = 1000.0
	targetRunC50P99       = 150 * time.Millisecond
	targetFirstEvent      = 5 * time.Millisecond
	targetCancelP99       = 50 * time.Millisecond
	targetRunsRSSMiB      = 100.0
	targetRunsRSSGrowth   = 0.10 // RSS after 10k runs at most 10% above RSS after 5k
	targetIdleTicks       = 2    // ~0: at most 20 ms of CPU in the idle window
	cancelAfterSeconds    = 30
	echoInput             = `{"messages":[{"role":"user","content":"hi"}]}`
	echoReply             = "echo: hi"
	runScenarioServerName = "runs"
)

// runBody is the body of every run the scenarios create: a run of the
// -assistant graph (set by run).
var runBody = echoRunBody("echo")

// echoRunBody is the body of a run of assistant with the echo input.
func echoRunBody(assistant string) []byte {
	return []byte(`{"assistant_id":"` + assistant + `","input":` + echoInput + `}`)
}

// runScenarioNames are the scenarios of the `runs` group, in the order they
// run: the sequential latency scenarios first, while the server holds few
// finished runs, then the c50 ones, then rss-10k-runs, which reuses the c50
// runs.
var runScenarioNames = []string{"runs-wait-c1", "first-event-c1", "cancel-latency", "runs-wait-c50", "runs-stream-c50", "rss-10k-runs"}

// runState is what the run scenarios share on their server: how many runs
// the c50 scenarios (and rss-10k-runs' top-up) completed, and the server's
// memory when that count passed the marks of rss-10k-runs.
type runState struct {
	c50Runs atomic.Int64
	// allRuns counts every run the scenarios created on the runs server.
	allRuns atomic.Int64
	mu      sync.Mutex
	marks   map[int64]procMem
}

// countC50Run counts one completed c50 run and reads the server's memory
// when the count reaches a mark (half of -rss-runs, and -rss-runs).
func (r *runner) countC50Run(t *target) {
	n := r.runs.c50Runs.Add(1)
	if n != int64(r.opts.rssRuns) && n != int64(r.opts.rssRuns/2) {
		return
	}
	m, err := readProcMem(t.pid)
	if err != nil {
		return
	}
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	if r.runs.marks == nil {
		r.runs.marks = map[int64]procMem{}
	}
	r.runs.marks[n] = m
}

func (r *runner) mark(n int) (procMem, bool) {
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	m, ok := r.runs.marks[int64(n)]
	return m, ok
}

// runsServer starts the server of the run scenarios, once (with
// -fresh-servers, once per scenario). It is a server of its own, so that its
// memory is that of runs only.
func (r *runner) runsServer() (*target, error) {
	if r.runsSrv == nil {
		r.runsGen++
		name := runScenarioServerName
		if r.runsGen > 1 {
			name = fmt.Sprintf("%s-%d", runScenarioServerName, r.runsGen)
		}
		t, err := startTarget(r.ctx, r.opts, r.tmp, name, r.client)
		if err != nil {
			return nil, err
		}
		r.runsSrv = t
	}
	return r.runsSrv, nil
}

// beginRunScenario notes how many runs the runs server already made, which
// the figures of a scenario depend on (finished runs are retained in memory
// for a while). With -fresh-servers it first stops the previous scenario's
// server, so that every run scenario starts on an empty one.
func (r *runner) beginRunScenario(s string) error {
	if r.opts.freshServers && r.runsSrv != nil {
		r.noteMemory(r.runsSrv, "at stop")
		err := r.runsSrv.stop()
		r.runsSrv = nil
		r.runs = runState{}
		if err != nil {
			return err
		}
	}
	if _, err := r.runsServer(); err != nil {
		return err
	}
	n := r.runs.allRuns.Load()
	fmt.Printf("[%s] runs made on this server (%s) before: %d\n", s, r.runsSrv.name, n)
	r.report.add(s, "runs made on this server before", fmt.Sprintf("%d", n), "", "")
	return nil
}

// makeThreads creates n threads (unmeasured, with -c workers) and returns
// their ids.
func (r *runner) makeThreads(t *target, n int, tag string) ([]string, error) {
	ids := make([]string, n)
	res := loop(r.ctx, r.opts.concurrency, n, r.opts.duration, func(ctx context.Context, i int) error {
		body := fmt.Appendf(nil, `{"metadata":{"bench":%q,"i":%d}}`, tag, i)
		resp, err := do(ctx, r.client, http.MethodPost, t.base(i)+"/threads", body, true)
		if err != nil {
			return err
		}
		var th struct {
			ThreadID string `json:"thread_id"`
		}
		if err := json.Unmarshal(resp.body, &th); err != nil || th.ThreadID == "" {
			return fmt.Errorf("POST /threads: no thread_id in %.200s (%v)", resp.body, err)
		}
		ids[i] = th.ThreadID
		return nil
	})
	if res.firstErr != nil {
		return nil, fmt.Errorf("creating %d threads: %d errors, first: %w", n, res.errors, res.firstErr)
	}
	if res.n != n {
		return nil, fmt.Errorf("creating threads stopped at %d of %d (time cap %s)", res.n, n, r.opts.duration)
	}
	return ids, nil
}

// checkEcho checks the body of /runs/wait: the echo graph's final values on
// a fresh thread, one human message and its echo.
func checkEcho(body []byte) error {
	var v struct {
		Messages []struct {
			Type    string `json:"type"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("wait body %.200q: %w", body, err)
	}
	if n := len(v.Messages); n != 2 || v.Messages[1].Type != "ai" || v.Messages[1].Content != echoReply {
		return fmt.Errorf("wait body %.300s: want 2 messages ending with the ai message %q", body, echoReply)
	}
	return nil
}

// stream sends one run-creating request to a /stream route, reads the SSE
// response to its end and checks it: metadata first, end last, no error.
func stream(ctx context.Context, c *http.Client, url string, body []byte) (streamSummary, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	if err != nil {
		return streamSummary{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	t0 := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return streamSummary{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b := make([]byte, 300)
		n, _ := resp.Body.Read(b)
		return streamSummary{}, fmt.Errorf("POST %s: status %d: %s", url, resp.StatusCode, b[:n])
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return streamSummary{}, fmt.Errorf("POST %s: Content-Type %q", url, ct)
	}
	s, err := readStream(resp.Body, t0)
	if err != nil {
		return s, fmt.Errorf("POST %s: %w", url, err)
	}
	switch {
	case s.errorData != nil:
		return s, fmt.Errorf("POST %s: error event: %.300s", url, s.errorData)
	case s.events < 2 || s.first != "metadata" || s.last != "end":
		return s, fmt.Errorf("POST %s: %d events, first %q, last %q; want metadata first and end last", url, s.events, s.first, s.last)
	}
	return s, nil
}

// eventCounts tracks the number of events per stream across workers.
type eventCounts struct {
	mu       sync.Mutex
	min, max int
	total    int64
	n        int64
}

func (e *eventCounts) add(k int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 || k < e.min {
		e.min = k
	}
	e.max = max(e.max, k)
	e.total += int64(k)
	e.n++
}

func (e *eventCounts) String() string {
	if e.n == 0 {
		return "none"
	}
	return fmt.Sprintf("min %d, max %d, mean %.2f", e.min, e.max, float64(e.total)/float64(e.n))
}

// checkNoBusyThreads checks that no thread is left busy once every run of a
// scenario has returned: the run engine settled every thread it touched
// (stateless runs delete their temporary thread).
func (r *runner) checkNoBusyThreads(t *target) error {
	n, err := r.count(t, `{"status":"busy"}`)
	if err != nil {
		return err
	}
	if n != 0 {
		return fmt.Errorf("%d threads still busy after every run returned", n)
	}
	return nil
}

func (r *runner) runsWaitC1() error {
	t, err := r.runsServer()
	if err != nil {
		return err
	}
	o := r.opts
	s := "runs-wait-c1"
	ids, err := r.makeThreads(t, o.warmup+o.runsN, s)
	if err != nil {
		return err
	}
	fmt.Printf("[%s] %d threads pre-created (one fresh thread per run)\n", s, len(ids))
	wait := func(off int) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			res, err := do(ctx, r.client, http.MethodPost, t.base(i)+"/threads/"+ids[off+i]+"/runs/wait", runBody, true)
			r.runs.allRuns.Add(1)
			if err != nil {
				return err
			}
			return checkEcho(res.body)
		}
	}
	if w := loop(r.ctx, 1, o.warmup, o.duration, wait(0)); w.firstErr != nil {
		return fmt.Errorf("warm-up: %w", w.firstErr)
	}
	res := loop(r.ctx, 1, o.runsN, o.duration, wait(o.warmup))
	fmt.Printf("[%s] %s\n", s, res.stats)
	r.report.addDur(s, "p50", res.p50, targetRunWaitC1P50)
	r.report.addDur(s, "p90", res.p90, 0)
	r.report.addDur(s, "p99", res.p99, 0)
	r.report.addDur(s, "max", res.pmax, 0)
	r.report.addRate(s, "runs/s", res.rate(), 0)
	if err := res.err(o.runsN); err != nil {
		return err
	}
	if res.n == 0 {
		return nil
	}
	// The last thread must have settled with the run's values.
	last := ids[o.warmup+res.n-1]
	th, err := do(r.ctx, r.client, http.MethodGet, t.baseURL+"/threads/"+last, nil, true)
	if err != nil {
		return err
	}
	var v struct {
		Status string `json:"status"`
		Values struct {
			Messages []any `json:"messages"`
		} `json:"values"`
	}
	if err := json.Unmarshal(th.body, &v); err != nil {
		return fmt.Errorf("GET /threads/%s: %w", last, err)
	}
	if v.Status != "idle" || len(v.Values.Messages) != 2 {
		return fmt.Errorf("GET /threads/%s after its run: status %q with %d messages; want idle with 2", last, v.Status, len(v.Values.Messages))
	}
	return r.checkNoBusyThreads(t)
}

// runsC50 runs -runs-c50-n stateless runs on -c workers through fn, which
// gets the base URL of the replica to use, and reports them under scenario s.
func (r *runner) runsC50(s string, fn func(ctx context.Context, base string) error) (*target, loopResult, error) {
	t, err := r.runsServer()
	if err != nil {
		return nil, loopResult{}, err
	}
	o := r.opts
	cost := r.meterCost(t)
	res := loop(r.ctx, o.concurrency, o.runsC50N, o.duration, func(ctx context.Context, i int) error {
		err := fn(ctx, t.base(i))
		r.runs.allRuns.Add(1)
		if err == nil {
			r.countC50Run(t)
		}
		return err
	})
	fmt.Printf("[%s] %s\n", s, res.stats)
	r.report.addRate(s, fmt.Sprintf("runs/s (c%d, %s)", o.concurrency, r.storeNote()), res.rate(), targetRunC50Rate)
	r.report.addDur(s, "p50", res.p50, 0)
	r.report.addDur(s, "p99", res.p99, targetRunC50P99)
	r.report.addDur(s, "max", res.pmax, 0)
	cost.report(s, "run", res.n)
	if res.capped {
		r.report.add(s, "note", fmt.Sprintf("stopped at the time cap after %d runs", res.n), "", "")
	}
	return t, res, res.err(o.runsC50N)
}

func (r *runner) runsWaitC50() error {
	t, _, err := r.runsC50("runs-wait-c50", r.statelessWait)
	if err != nil {
		return err
	}
	return r.checkNoBusyThreads(t)
}

// statelessWait is one POST /runs/wait to the server at base, checked.
func (r *runner) statelessWait(ctx context.Context, base string) error {
	res, err := do(ctx, r.client, http.MethodPost, base+"/runs/wait", runBody, true)
	if err != nil {
		return err
	}
	return checkEcho(res.body)
}

func (r *runner) runsStreamC50() error {
	s := "runs-stream-c50"
	var counts eventCounts
	t, _, err := r.runsC50(s, func(ctx context.Context, base string) error {
		sum, err := stream(ctx, r.client, base+"/runs/stream", runBody)
		if err == nil {
			counts.add(sum.events)
		}
		return err
	})
	fmt.Printf("[%s] events per stream: %s\n", s, &counts)
	r.report.add(s, "events per stream", counts.String(), "", "")
	if err != nil {
		return err
	}
	return r.checkNoBusyThreads(t)
}

func (r *runner) firstEventC1() error {
	t, err := r.runsServer()
	if err != nil {
		return err
	}
	o := r.opts
	s := "first-event-c1"
	ids, err := r.makeThreads(t, o.warmup+o.runsN, s)
	if err != nil {
		return err
	}
	fmt.Printf("[%s] %d threads pre-created (one fresh thread per run)\n", s, len(ids))
	var whole []time.Duration // whole stream, for information; one worker
	var counts eventCounts
	fn := func(off int, keep bool) func(ctx context.Context, i int) (time.Duration, error) {
		return func(ctx context.Context, i int) (time.Duration, error) {
			t0 := time.Now()
			sum, err := stream(ctx, r.client, t.base(i)+"/threads/"+ids[off+i]+"/runs/stream", runBody)
			r.runs.allRuns.Add(1)
			if err != nil {
				return 0, err
			}
			if keep {
				whole = append(whole, time.Since(t0))
				counts.add(sum.events)
			}
			return sum.firstAt, nil
		}
	}
	if w := loopTimed(r.ctx, 1, o.warmup, o.duration, fn(0, false)); w.firstErr != nil {
		return fmt.Errorf("warm-up: %w", w.firstErr)
	}
	res := loopTimed(r.ctx, 1, o.runsN, o.duration, fn(o.warmup, true))
	ws := summarize(whole, 0, res.wall, res.capped)
	fmt.Printf("[%s] to the first event (metadata): %s\n", s, res.stats)
	fmt.Printf("[%s] whole stream: %s; events per stream: %s\n", s, ws, &counts)
	r.report.addDur(s, "p50 to the metadata event", res.p50, targetFirstEvent)
	r.report.addDur(s, "p90 to the metadata event", res.p90, targetFirstEvent)
	r.report.addDur(s, "p99 to the metadata event", res.p99, targetFirstEvent)
	r.report.addDur(s, "max to the metadata event", res.pmax, 0)
	r.report.add(s, "p50 / p99 whole stream", ms(ws.p50)+" / "+ms(ws.p99), "", "")
	if err := res.err(o.runsN); err != nil {
		return err
	}
	return r.checkNoBusyThreads(t)
}

func (r *runner) cancelLatency() error {
	t, err := r.runsServer()
	if err != nil {
		return err
	}
	o := r.opts
	s := "cancel-latency"
	pendingBody := fmt.Appendf(nil, `{"assistant_id":"echo","input":%s,"after_seconds":%d}`, echoInput, cancelAfterSeconds)
	fn := func(ctx context.Context, i int) (time.Duration, error) {
		// Set-up, unmeasured: a thread and a run held back by after_seconds.
		base := t.base(i)
		th, err := do(ctx, r.client, http.MethodPost, base+"/threads", fmt.Appendf(nil, `{"metadata":{"bench":%q,"i":%d}}`, s, i), true)
		if err != nil {
			return 0, err
		}
		var tv struct {
			ThreadID string `json:"thread_id"`
		}
		if err := json.Unmarshal(th.body, &tv); err != nil || tv.ThreadID == "" {
			return 0, fmt.Errorf("POST /threads: no thread_id in %.200s", th.body)
		}
		runs := base + "/threads/" + tv.ThreadID + "/runs"
		created, err := do(ctx, r.client, http.MethodPost, runs, pendingBody, true)
		r.runs.allRuns.Add(1)
		if err != nil {
			return 0, err
		}
		var rv struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(created.body, &rv); err != nil || rv.RunID == "" {
			return 0, fmt.Errorf("POST %s: no run_id in %.200s", runs, created.body)
		}
		if rv.Status != "pending" {
			return 0, fmt.Errorf("run %s created with after_seconds=%d is %q, want pending", rv.RunID, cancelAfterSeconds, rv.Status)
		}
		// Measured: the cancel, until its 204.
		t0 := time.Now()
		cres, err := do(ctx, r.client, http.MethodPost, runs+"/"+rv.RunID+"/cancel?wait=1", nil, false)
		d := time.Since(t0)
		if err != nil {
			return 0, err
		}
		if cres.status != http.StatusNoContent {
			return 0, fmt.Errorf("cancel?wait=1 of run %s: status %d, want 204", rv.RunID, cres.status)
		}
		// Check, unmeasured: the run is interrupted once the cancel returned.
		got, err := do(ctx, r.client, http.MethodGet, runs+"/"+rv.RunID, nil, true)
		if err != nil {
			return 0, err
		}
		if err := json.Unmarshal(got.body, &rv); err != nil {
			return 0, fmt.Errorf("GET run %s: %w", rv.RunID, err)
		}
		if rv.Status != "interrupted" {
			return 0, fmt.Errorf("run %s is %q after cancel?wait=1 returned 204, want interrupted", rv.RunID, rv.Status)
		}
		return d, nil
	}
	if w := loopTimed(r.ctx, 1, min(o.warmup, 10), o.duration, fn); w.firstErr != nil {
		return fmt.Errorf("warm-up: %w", w.firstErr)
	}
	res := loopTimed(r.ctx, 1, o.cancelN, o.duration, fn)
	fmt.Printf("[%s] POST .../cancel?wait=1 of a pending run (after_seconds=%d): %s\n", s, cancelAfterSeconds, res.stats)
	r.report.addDur(s, "p50 (queued run, cancel?wait=1 -> 204)", res.p50, 0)
	r.report.addDur(s, "p99", res.p99, targetCancelP99)
	r.report.addDur(s, "max", res.pmax, 0)
	if err := res.err(o.cancelN); err != nil {
		return err
	}
	return r.checkNoBusyThreads(t)
}

func (r *runner) rss10kRuns() error {
	t, err := r.runsServer()
	if err != nil {
		return err
	}
	o := r.opts
	s := "rss-10k-runs"
	if done := int(r.runs.c50Runs.Load()); done < o.rssRuns {
		n := o.rssRuns - done
		fmt.Printf("[%s] %d c50 runs so far; running %d stateless POST /runs/wait with %d workers\n", s, done, n, o.concurrency)
		res := loop(r.ctx, o.concurrency, n, o.duration, func(ctx context.Context, i int) error {
			err := r.statelessWait(ctx, t.base(i))
			r.runs.allRuns.Add(1)
			if err == nil {
				r.countC50Run(t)
			}
			return err
		})
		fmt.Printf("[%s] top-up: %s\n", s, res.stats)
		if err := res.err(n); err != nil {
			return err
		}
	}
	note := r.inProcessNote()
	half, okHalf := r.mark(o.rssRuns / 2)
	full, okFull := r.mark(o.rssRuns)
	if !okHalf || !okFull {
		return fmt.Errorf("memory not sampled at %d and %d c50 runs (%d completed)", o.rssRuns/2, o.rssRuns, r.runs.c50Runs.Load())
	}
	now, err := readProcMem(t.pid)
	if err != nil {
		return err
	}
	fmt.Printf("[%s] pid %d after %d c50 runs: VmRSS %.1f MiB (RssAnon %.1f, RssFile %.1f); after %d: VmRSS %.1f MiB (RssAnon %.1f, RssFile %.1f)%s\n",
		s, t.pid, o.rssRuns/2, mib(half.rssKiB), mib(half.anonKiB), mib(half.fileKiB), o.rssRuns, mib(full.rssKiB), mib(full.anonKiB), mib(full.fileKiB), note)
	fmt.Printf("[%s] now, after %d runs of every scenario on this server: VmRSS %.1f MiB (RssAnon %.1f, RssFile %.1f), VmHWM %.1f MiB; db file %.1f MiB\n",
		s, r.runs.allRuns.Load(), mib(now.rssKiB), mib(now.anonKiB), mib(now.fileKiB), mib(now.hwmKiB), float64(t.dbFileSize())/(1<<20))
	k := func(n int) string {
		if n%1000 == 0 {
			return fmt.Sprintf("%dk", n/1000)
		}
		return fmt.Sprint(n)
	}
	r.report.addMiB(s, "VmRSS MiB after "+k(o.rssRuns/2)+" c50 runs"+note, mib(half.rssKiB), 0)
	r.report.addMiB(s, "VmRSS MiB after "+k(o.rssRuns)+" c50 runs"+note, mib(full.rssKiB), targetRunsRSSMiB)
	growth := float64(full.rssKiB-half.rssKiB) / float64(half.rssKiB)
	r.report.add(s, "VmRSS growth "+k(o.rssRuns/2)+" -> "+k(o.rssRuns), fmt.Sprintf("%+.1f%% (%+.1f MiB)", 100*growth, mib(full.rssKiB-half.rssKiB)),
		fmt.Sprintf("<= +%.0f%%", 100*targetRunsRSSGrowth), verdict(growth <= targetRunsRSSGrowth))
	r.report.addMiB(s, "  of which RssAnon MiB at "+k(o.rssRuns), mib(full.anonKiB), 0)
	r.report.addMiB(s, "  of which RssFile MiB at "+k(o.rssRuns), mib(full.fileKiB), 0)
	r.report.addMiB(s, fmt.Sprintf("VmRSS MiB now (%d runs in all)", r.runs.allRuns.Load()), mib(now.rssKiB), 0)
	r.report.addMiB(s, "VmHWM MiB (peak)"+note, mib(now.hwmKiB), 0)

	// Idle CPU: let the tail of the load settle, then count the CPU ticks
	// the process spends in a window with no requests.
	fmt.Printf("[%s] idle: settling %s, then measuring CPU over %s\n", s, o.idleSettle, o.idleWindow)
	if err := retry.Wait(r.ctx, o.idleSettle); err != nil {
		return fmt.Errorf("interrupted while idle: %w", err)
	}
	c0, err := procCPUTicks(t.pid)
	if err != nil {
		return err
	}
	if err := retry.Wait(r.ctx, o.idleWindow); err != nil {
		return fmt.Errorf("interrupted while idle: %w", err)
	}
	c1, err := procCPUTicks(t.pid)
	if err != nil {
		return err
	}
	fmt.Printf("[%s] idle CPU: %d ticks (utime+stime, 10 ms each) in %s, after %s quiet%s\n", s, c1-c0, o.idleWindow, o.idleSettle, note)
	r.report.add(s, fmt.Sprintf("idle CPU ticks in %s after %s quiet (utime+stime)%s", o.idleWindow, o.idleSettle, note), fmt.Sprintf("%d", c1-c0),
		fmt.Sprintf("~0 (<= %d)", targetIdleTicks), verdict(c1-c0 <= targetIdleTicks))
	return nil
}
