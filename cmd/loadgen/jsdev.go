package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// jsSideBySide serves one LangGraph.js graph by this server and by the JS
// server (`langgraphjs dev`, @langchain/langgraph-cli) on the same machine,
// in rounds that alternate which goes first, and compares them.
const jsSideBySide = "js-side-by-side"

// Targets of jsSideBySide (issue 22): this server's run latency at c=1 at
// least 50 times lower, its rate at c=50 at least 10 times higher, and its
// peak memory (server plus graph workers) no more than the JS server's.
const (
	targetJSLatencyRatio = 50.0
	targetJSRateRatio    = 10.0
)

// jsServerNames are the two servers of jsSideBySide, in report order.
var jsServerNames = [2]string{"agentserver", "langgraphjs-dev"}

// jsRound is one server's figures in one round.
type jsRound struct {
	c1, c50 loopResult
	// peakKiB is the highest sum of VmRSS over the server's process tree,
	// sampled every rssSampleEvery from its start to its stop; procs is
	// the number of processes in the tree at that sample.
	peakKiB int64
	procs   int
}

// rssSampleEvery is how often jsSideBySide samples the servers' memory.
const rssSampleEvery = 50 * time.Millisecond

// jsSideBySideRun runs -js-rounds rounds; in each, both servers are
// started fresh, measured one after the other (this server first in odd
// rounds, the JS server first in even ones) and stopped.
func (r *runner) jsSideBySideRun() error {
	o := r.opts
	dir, err := filepath.Abs(o.jsDevDir)
	if err != nil {
		return err
	}
	cfg := filepath.Join(dir, "langgraph.json")
	cli := filepath.Join(dir, "node_modules", "@langchain", "langgraph-cli", "dist", "cli", "cli.mjs")
	if _, err := os.Stat(cli); err != nil {
		return fmt.Errorf("the JS server is not installed (run `npm ci --no-audit --no-fund` in %s): %w", dir, err)
	}
	fmt.Printf("[%s] graph %q of %s; %d rounds; c1: %d runs on fresh threads; c%d: %d stateless runs\n",
		jsSideBySide, o.jsGraph, cfg, o.jsRounds, o.jsC1N, o.concurrency, o.jsC50N)
	body := echoRunBody(o.jsGraph)
	rounds := make([][2]jsRound, 0, o.jsRounds)
	for k := range o.jsRounds {
		var round [2]jsRound
		order := []int{0, 1}
		if k%2 == 1 {
			order = []int{1, 0}
		}
		for _, which := range order {
			name := fmt.Sprintf("%s-%d", jsServerNames[which], k+1)
			var t *target
			if which == 0 {
				so := o
				so.configFile = cfg
				t, err = startProcess(r.ctx, so, r.tmp, name, "", r.client)
			} else {
				t, err = startJSDev(r.ctx, o, r.tmp, name, dir, cli, cfg, r.client)
			}
			if err != nil {
				return err
			}
			res, err := r.jsMeasure(t, name, body)
			if which == 0 {
				err = errors.Join(err, t.stopOne())
			} else {
				err = errors.Join(err, t.stopGroup())
			}
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			round[which] = res
			fmt.Printf("[%s] %s: c1 p50 %s, c%d %.1f runs/s, peak RSS %.1f MiB (%d processes); load %s\n",
				jsSideBySide, name, ms(res.c1.p50), o.concurrency, res.c50.rate(), mib(res.peakKiB), res.procs, loadAvg())
		}
		rounds = append(rounds, round)
	}
	r.jsReport(rounds)
	return nil
}

// jsMeasure measures one started server: -warmup unmeasured runs, the c1
// runs (each on a thread created unmeasured just before), then the c50
// stateless runs, sampling the memory of its process tree throughout.
func (r *runner) jsMeasure(t *target, name string, body []byte) (jsRound, error) {
	o := r.opts
	var res jsRound
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(rssSampleEvery)
		defer tick.Stop()
		for {
			if kib, n := treeRSS(t.pid); kib > res.peakKiB {
				res.peakKiB, res.procs = kib, n
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		close(stop)
		wg.Wait()
	}()
	onThread := func(ctx context.Context, _ int) (time.Duration, error) {
		th, err := do(ctx, r.client, http.MethodPost, t.baseURL+"/threads", []byte(`{}`), true)
		if err != nil {
			return 0, err
		}
		id, err := threadID(th.body)
		if err != nil {
			return 0, err
		}
		t0 := time.Now()
		w, err := do(ctx, r.client, http.MethodPost, t.baseURL+"/threads/"+id+"/runs/wait", body, true)
		took := time.Since(t0)
		if err != nil {
			return 0, err
		}
		return took, checkEcho(w.body)
	}
	if w := loopTimed(r.ctx, 1, o.warmup, o.duration, onThread); w.firstErr != nil {
		return res, fmt.Errorf("warm-up: %w", w.firstErr)
	}
	res.c1 = loopTimed(r.ctx, 1, o.jsC1N, o.duration, onThread)
	fmt.Printf("[%s] c1 %s\n", name, res.c1.stats)
	if err := res.c1.err(o.jsC1N); err != nil {
		return res, fmt.Errorf("c1: %w", err)
	}
	res.c50 = loop(r.ctx, o.concurrency, o.jsC50N, o.duration, func(ctx context.Context, _ int) error {
		w, err := do(ctx, r.client, http.MethodPost, t.baseURL+"/runs/wait", body, true)
		if err != nil {
			return err
		}
		return checkEcho(w.body)
	})
	fmt.Printf("[%s] c%d %s\n", name, o.concurrency, res.c50.stats)
	if res.c50.firstErr != nil {
		return res, fmt.Errorf("c%d: %w", o.concurrency, res.c50.firstErr)
	}
	return res, nil
}

// jsReport adds each round's figures and ratios, and their ranges, to the
// summary.
func (r *runner) jsReport(rounds [][2]jsRound) {
	s := jsSideBySide
	c := r.opts.concurrency
	var lat, rate, mem []float64
	for k, rd := range rounds {
		a, j := rd[0], rd[1]
		p := fmt.Sprintf("round %d: ", k+1)
		r.report.add(s, p+"c1 p50 agentserver / JS server", ms(a.c1.p50)+" / "+ms(j.c1.p50), "", "")
		r.report.add(s, p+fmt.Sprintf("c%d runs/s agentserver / JS server", c), fmt.Sprintf("%.1f / %.1f", a.c50.rate(), j.c50.rate()), "", "")
		r.report.add(s, p+"peak RSS MiB agentserver / JS server", fmt.Sprintf("%.1f (%d procs) / %.1f (%d procs)", mib(a.peakKiB), a.procs, mib(j.peakKiB), j.procs), "", "")
		if a.c1.p50 > 0 && j.c50.rate() > 0 && j.peakKiB > 0 {
			lat = append(lat, float64(j.c1.p50)/float64(a.c1.p50))
			rate = append(rate, a.c50.rate()/j.c50.rate())
			mem = append(mem, float64(a.peakKiB)/float64(j.peakKiB))
		}
	}
	if len(lat) == 0 {
		return
	}
	lo, hi := spread(lat)
	r.report.add(s, "c1 p50: JS server / agentserver, range over rounds", fmt.Sprintf("%.0f-%.0fx", lo, hi), fmt.Sprintf(">= %.0fx", targetJSLatencyRatio), verdict(lo >= targetJSLatencyRatio))
	lo, hi = spread(rate)
	r.report.add(s, fmt.Sprintf("c%d runs/s: agentserver / JS server, range", c), fmt.Sprintf("%.1f-%.1fx", lo, hi), fmt.Sprintf(">= %.0fx", targetJSRateRatio), verdict(lo >= targetJSRateRatio))
	lo, hi = spread(mem)
	r.report.add(s, "peak RSS: agentserver / JS server, range", fmt.Sprintf("%.2f-%.2f", lo, hi), "<= 1", verdict(hi <= 1))
}

// spread returns the least and the greatest of v (not empty).
func spread(v []float64) (lo, hi float64) {
	lo, hi = v[0], v[0]
	for _, x := range v[1:] {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// threadID reads thread_id from the body of POST /threads.
func threadID(body []byte) (string, error) {
	const key = `"thread_id":"`
	i := strings.Index(string(body), key)
	if i < 0 {
		return "", fmt.Errorf("POST /threads: no thread_id in %.200s", body)
	}
	rest := string(body[i+len(key):])
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return "", fmt.Errorf("POST /threads: no thread_id in %.200s", body)
	}
	return rest[:j], nil
}

// startJSDev starts `langgraphjs dev` on a free port of 127.0.0.1, serving
// cfg from dir, in a process group of its own (the CLI starts the server
// as a child process, which starts its own), and waits for GET /ok. The
// CLI's usage analytics are turned off and LangSmith tracing too, so that
// nothing leaves the machine.
func startJSDev(ctx context.Context, o options, tmp, name, dir, cli, cfg string, client *http.Client) (*target, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	host, port, _ := strings.Cut(addr, ":")
	lf, err := os.Create(filepath.Join(tmp, "server-"+name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", cli, "dev", "--host", host, "--port", port, "--no-browser", "--no-reload", "--config", cfg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LANGGRAPH_CLI_NO_ANALYTICS=1", "LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start langgraphjs dev: %w", err)
	}
	t := &target{name: name, cmd: cmd, logFile: lf, baseURL: "http://" + addr, pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() {
		t.waitErr = cmd.Wait()
		close(t.exited)
	}()
	fmt.Printf("[%s] started node %s dev --host %s --port %s --no-browser --no-reload --config %s (pid %d)\n", name, cli, host, port, cfg, t.pid)
	if err := t.waitReady(ctx, client, max(o.readyTO, time.Minute)); err != nil {
		return nil, errors.Join(err, t.stopGroup())
	}
	return t, nil
}

// stopGroup stops a target started in a process group of its own: SIGTERM
// to the group, SIGKILL to it after 10 s, and waits for the leader.
func (t *target) stopGroup() error {
	defer t.logFile.Close()
	pgid := t.cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s: %w", t.name, err)
	}
	select {
	case <-t.exited:
	case <-time.After(10 * time.Second):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-t.exited
	}
	// The group may outlive its leader by a moment: make sure of it.
	syscall.Kill(-pgid, syscall.SIGKILL)
	return nil
}

// treeRSS returns the sum of VmRSS over root and its descendants, in KiB,
// and how many processes that is.
func treeRSS(root int) (kib int64, procs int) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, 0
	}
	parent := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := ppidOf(pid); ok {
			parent[pid] = pp
		}
	}
	for pid := range parent {
		if !descends(pid, root, parent) {
			continue
		}
		if m, err := readProcMem(pid); err == nil {
			kib += m.rssKiB
			procs++
		}
	}
	return kib, procs
}

// descends reports whether pid is root or one of its descendants.
func descends(pid, root int, parent map[int]int) bool {
	for range 64 {
		if pid == root {
			return true
		}
		pp, ok := parent[pid]
		if !ok || pp <= 1 {
			return false
		}
		pid = pp
	}
	return false
}

// ppidOf reads the parent pid from /proc/<pid>/stat (field 4).
func ppidOf(pid int) (int, bool) {
	f, err := statFields(pid)
	if err != nil {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// loadAvg returns the 1-minute load average, for the log.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f, _, _ := strings.Cut(string(b), " ")
	return f
}
