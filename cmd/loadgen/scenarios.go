package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"agentserver/internal/llm/scripted"
)

// Targets from the performance issue.
const (
	targetC1P50   = 1500 * time.Microsecond
	targetC50Rate = 5000.0
	// targetC50RatePG is the create-threads-c50 target on PostgreSQL (one
	// replica, a local database).
	targetC50RatePG  = 3000.0
	targetSearchP50  = 25 * time.Millisecond
	targetRSSMiB     = 150.0
	seedUsers        = 100 // seeded metadata: {"user": "u<i%100>", "i": i}
	filterUserIdx    = 42
	filterUser       = "u42"
	seedTimeoutFloor = 10 * time.Minute
)

// runner owns the servers and the report of one loadgen run.
type runner struct {
	opts   options
	tmp    string
	ctx    context.Context
	client *http.Client
	report report

	// writeSrv serves the create-threads-* scenarios.
	writeSrv *target
	// seededSrv holds exactly seedN seeded threads, for search and rss.
	seededSrv *target
	seedErr   error

	// runsSrv serves the run scenarios; runs is their shared state.
	runsSrv *target
	runsGen int
	runs    runState

	// crossSrv serves crossReplicaScenario; llm is its scripted model.
	crossSrv *target
	llm      *scripted.Server
}

// runAll runs the selected scenarios in order, stops every server it started
// and returns the operational errors.
func (r *runner) runAll() error {
	var errs []error
	for _, name := range r.opts.scenarios {
		if r.ctx.Err() != nil {
			errs = append(errs, r.ctx.Err())
			break
		}
		fmt.Printf("\n== %s\n", name)
		var err error
		if slices.Contains(runScenarioNames, name) {
			err = r.beginRunScenario(name)
		}
		if err == nil {
			err = r.runScenario(name)
		}
		if err != nil {
			fmt.Printf("[%s] ERROR: %v\n", name, err)
			r.report.add(name, "operational error", oneLine(err.Error(), 100), "", "")
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if r.opts.memProfile != "" {
		if err := writeHeapProfile(r.opts.memProfile); err != nil {
			errs = append(errs, err)
		}
	}
	for _, t := range []*target{r.writeSrv, r.seededSrv, r.runsSrv, r.crossSrv} {
		if t == nil {
			continue
		}
		for _, p := range t.replicas() {
			r.noteMemory(p, "at stop")
		}
		if err := t.stop(); err != nil {
			errs = append(errs, err)
		} else {
			fmt.Printf("[%s] server stopped (SIGTERM)\n", t.name)
		}
	}
	if r.llm != nil {
		r.llm.Close()
	}
	return errors.Join(errs...)
}

// runScenario runs one scenario by name.
func (r *runner) runScenario(name string) error {
	switch name {
	case "create-threads-c1":
		return r.createThreadsC1()
	case "create-threads-c50":
		return r.createThreadsC50()
	case "search-100k":
		return r.search100k()
	case "rss-100k":
		return r.rss100k()
	case "runs-wait-c1":
		return r.runsWaitC1()
	case "runs-wait-c50":
		return r.runsWaitC50()
	case "runs-stream-c50":
		return r.runsStreamC50()
	case "first-event-c1":
		return r.firstEventC1()
	case "cancel-latency":
		return r.cancelLatency()
	case "rss-10k-runs":
		return r.rss10kRuns()
	case crossReplicaScenario:
		return r.crossReplicaFirstEvent()
	case jsSideBySide:
		return r.jsSideBySideRun()
	}
	return fmt.Errorf("no scenario %q", name)
}

func (r *runner) writeServer() (*target, error) {
	if r.writeSrv == nil {
		t, err := startTarget(r.ctx, r.opts, r.tmp, "write", r.client)
		if err != nil {
			return nil, err
		}
		r.writeSrv = t
	}
	return r.writeSrv, nil
}

// seededServer starts a fresh server and seeds it with seedN threads, once.
func (r *runner) seededServer() (*target, error) {
	if r.seededSrv != nil || r.seedErr != nil {
		return r.seededSrv, r.seedErr
	}
	r.seededSrv, r.seedErr = r.seed()
	return r.seededSrv, r.seedErr
}

func (r *runner) seed() (*target, error) {
	t, err := startTarget(r.ctx, r.opts, r.tmp, "seeded", r.client)
	if err != nil {
		return nil, err
	}
	r.seededSrv = t // stopped by runAll even if seeding fails
	o := r.opts
	limit := max(o.duration, seedTimeoutFloor)
	fmt.Printf("[seed] creating %d threads with %d workers (cap %s)\n", o.seedN, o.seedConc, limit)
	res := loop(r.ctx, o.seedConc, o.seedN, limit, func(ctx context.Context, i int) error {
		body := fmt.Appendf(nil, `{"metadata":{"user":"u%d","i":%d}}`, i%seedUsers, i)
		_, err := do(ctx, r.client, http.MethodPost, t.base(i)+"/threads", body, false)
		return err
	})
	fmt.Printf("[seed] %s\n", res.stats)
	r.report.add("seed-100k", fmt.Sprintf("create req/s (c%d)", o.seedConc), fmt.Sprintf("%.0f", res.rate()), "", "")
	if res.firstErr != nil {
		return t, fmt.Errorf("seeding: %d errors, first: %w", res.errors, res.firstErr)
	}
	if res.n != o.seedN {
		return t, fmt.Errorf("seeding stopped at %d of %d threads (time cap %s)", res.n, o.seedN, limit)
	}
	n, err := r.count(t, `{}`)
	if err != nil {
		return t, err
	}
	if n != o.seedN {
		return t, fmt.Errorf("after seeding, /threads/count = %d, want %d", n, o.seedN)
	}
	return t, nil
}

func (r *runner) createThreadsC1() error {
	t, err := r.writeServer()
	if err != nil {
		return err
	}
	o := r.opts
	post := func(tag string) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			body := fmt.Appendf(nil, `{"metadata":{"bench":"%s","i":%d}}`, tag, i)
			_, err := do(ctx, r.client, http.MethodPost, t.base(i)+"/threads", body, false)
			return err
		}
	}
	if w := loop(r.ctx, 1, o.warmup, o.duration, post("c1-warmup")); w.firstErr != nil {
		return fmt.Errorf("warm-up: %w", w.firstErr)
	}
	res := loop(r.ctx, 1, o.n, o.duration, post("c1"))
	fmt.Printf("[create-threads-c1] %s\n", res.stats)
	s := "create-threads-c1"
	r.report.addDur(s, "p50", res.p50, targetC1P50)
	r.report.addDur(s, "p90", res.p90, 0)
	r.report.addDur(s, "p99", res.p99, 0)
	r.report.addDur(s, "max", res.pmax, 0)
	r.report.add(s, "req/s", fmt.Sprintf("%.0f", res.rate()), "", "")
	return res.err(o.n)
}

func (r *runner) createThreadsC50() error {
	t, err := r.writeServer()
	if err != nil {
		return err
	}
	o := r.opts
	tag := fmt.Sprintf("c%d", o.concurrency)
	cost := r.meterCost(t)
	res := loop(r.ctx, o.concurrency, o.c50N, o.duration, func(ctx context.Context, i int) error {
		body := fmt.Appendf(nil, `{"metadata":{"bench":"%s","i":%d}}`, tag, i)
		_, err := do(ctx, r.client, http.MethodPost, t.base(i)+"/threads", body, false)
		return err
	})
	fmt.Printf("[create-threads-c50] %s\n", res.stats)
	s := "create-threads-c50"
	target := targetC50Rate
	if o.databaseURL != "" {
		target = targetC50RatePG
	}
	r.report.addRate(s, fmt.Sprintf("req/s (c%d, %s)", o.concurrency, r.storeNote()), res.rate(), target)
	r.report.addDur(s, "p50", res.p50, 0)
	r.report.addDur(s, "p99", res.p99, 0)
	r.report.addDur(s, "max", res.pmax, 0)
	cost.report(s, "request", res.n)
	if err := res.err(o.c50N); err != nil {
		return err
	}
	// Every acknowledged create must be visible.
	n, err := r.count(t, fmt.Sprintf(`{"metadata":{"bench":%q}}`, tag))
	if err != nil {
		return err
	}
	if n != res.n {
		return fmt.Errorf("/threads/count for bench=%s is %d, but %d creates succeeded", tag, n, res.n)
	}
	return nil
}

func (r *runner) search100k() error {
	t, err := r.seededServer()
	if err != nil {
		return err
	}
	o := r.opts
	s := "search-100k"
	wantUser := 0
	for i := range o.seedN {
		if i%seedUsers == filterUserIdx {
			wantUser++
		}
	}
	filtered := fmt.Sprintf(`{"metadata":{"user":%q},"limit":10}`, filterUser)
	if err := r.checkSearchPage(t, filtered, wantUser); err != nil {
		return err
	}
	if err := r.checkSearchPage(t, `{"limit":10}`, o.seedN); err != nil {
		return err
	}

	type measure struct {
		metric, path, body string
		want               int
		target             time.Duration
		count              bool
	}
	for _, m := range []measure{
		{"filtered search p50 (user=" + filterUser + ", limit 10)", "/threads/search", filtered, wantUser, targetSearchP50, false},
		{"unfiltered search p50 (limit 10)", "/threads/search", `{"limit":10}`, o.seedN, 0, false},
		{"filtered count p50", "/threads/count", fmt.Sprintf(`{"metadata":{"user":%q}}`, filterUser), wantUser, 0, true},
		{"unfiltered count p50", "/threads/count", `{}`, o.seedN, 0, true},
	} {
		body := []byte(m.body)
		fn := func(ctx context.Context, i int) error {
			res, err := do(ctx, r.client, http.MethodPost, t.base(i)+m.path, body, m.count)
			if err != nil {
				return err
			}
			got := res.total
			if m.count {
				got, err = strconv.Atoi(strings.TrimSpace(string(res.body)))
				if err != nil {
					return fmt.Errorf("count body %q: %w", res.body, err)
				}
			}
			if got != m.want {
				return fmt.Errorf("POST %s %s: total %d, want %d", m.path, m.body, got, m.want)
			}
			return nil
		}
		if w := loop(r.ctx, 1, min(o.warmup, 10), o.duration, fn); w.firstErr != nil {
			return fmt.Errorf("warm-up %s: %w", m.metric, w.firstErr)
		}
		res := loop(r.ctx, 1, o.searchN, o.duration, fn)
		fmt.Printf("[search-100k] POST %s %s: %s\n", m.path, m.body, res.stats)
		r.report.addDur(s, m.metric, res.p50, m.target)
		r.report.addDur(s, strings.Replace(m.metric, "p50", "p99", 1), res.p99, 0)
		if err := res.err(o.searchN); err != nil {
			return err
		}
	}
	return nil
}

// checkSearchPage checks one search response: a full page of threads and the
// expected X-Pagination-Total.
func (r *runner) checkSearchPage(t *target, body string, want int) error {
	res, err := do(r.ctx, r.client, http.MethodPost, t.baseURL+"/threads/search", []byte(body), true)
	if err != nil {
		return err
	}
	var page []struct {
		ThreadID string `json:"thread_id"`
	}
	if err := json.Unmarshal(res.body, &page); err != nil {
		return fmt.Errorf("search %s: decode: %w", body, err)
	}
	if len(page) != min(10, want) || res.total != want {
		return fmt.Errorf("search %s: %d threads, total %d; want %d, %d", body, len(page), res.total, min(10, want), want)
	}
	return nil
}

func (r *runner) rss100k() error {
	t, err := r.seededServer()
	if err != nil {
		return err
	}
	s := "rss-100k"
	m, err := readProcMem(t.pid)
	if err != nil {
		return err
	}
	note := r.inProcessNote()
	fmt.Printf("[rss-100k] pid %d: VmRSS %.1f MiB (RssAnon %.1f, RssFile %.1f), VmHWM %.1f MiB%s; db file %.1f MiB\n",
		t.pid, mib(m.rssKiB), mib(m.anonKiB), mib(m.fileKiB), mib(m.hwmKiB), note, float64(t.dbFileSize())/(1<<20))
	r.report.addMiB(s, "VmRSS MiB"+note, mib(m.rssKiB), targetRSSMiB)
	r.report.addMiB(s, "  of which RssAnon MiB (heap, stacks)", mib(m.anonKiB), 0)
	r.report.addMiB(s, "  of which RssFile MiB (bbolt mmap, binary)", mib(m.fileKiB), 0)
	r.report.addMiB(s, "VmHWM MiB (peak)"+note, mib(m.hwmKiB), 0)
	if n := t.dbFileSize(); n >= 0 {
		r.report.addMiB(s, "db file MiB", float64(n)/(1<<20), 0)
	}
	return nil
}

// storeNote names where the servers keep their data, for the labels of
// throughput figures.
func (r *runner) storeNote() string {
	if r.opts.databaseURL == "" {
		return "fsync on"
	}
	return fmt.Sprintf("PostgreSQL, %d replica(s)", max(r.opts.replicas, 1))
}

// inProcessNote qualifies a figure of the server's process: with -inprocess
// that process is loadgen too.
func (r *runner) inProcessNote() string {
	if r.opts.inProcess {
		return " (in-process: includes loadgen)"
	}
	return ""
}

// noteMemory prints a server's memory before it stops (informational).
func (r *runner) noteMemory(t *target, when string) {
	m, err := readProcMem(t.pid)
	if err != nil {
		return
	}
	fmt.Printf("[%s] %s: VmRSS %.1f MiB (RssAnon %.1f, RssFile %.1f), VmHWM %.1f MiB, %s\n",
		t.name, when, mib(m.rssKiB), mib(m.anonKiB), mib(m.fileKiB), mib(m.hwmKiB), t.dbFileNote())
}

// count returns the body of POST /threads/count with body.
func (r *runner) count(t *target, body string) (int, error) {
	res, err := do(r.ctx, r.client, http.MethodPost, t.baseURL+"/threads/count", []byte(body), true)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(res.body)))
	if err != nil {
		return 0, fmt.Errorf("/threads/count body %q: %w", res.body, err)
	}
	return n, nil
}

// err turns failed requests into an operational error. Stopping at the time
// cap is not an error: the figures are still valid, just over fewer requests.
func (l loopResult) err(want int) error {
	if l.firstErr != nil {
		return fmt.Errorf("%d of %d requests failed, first: %w", l.errors, want, l.firstErr)
	}
	return nil
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// oneLine returns the first line of s, cut to n bytes, for the summary table.
func oneLine(s string, n int) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// writeHeapProfile writes loadgen's heap profile (live objects after a GC)
// to path; with -inprocess the heap is mostly the server's.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("heap profile: %w", err)
	}
	return f.Close()
}
