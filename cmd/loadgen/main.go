// Command loadgen measures the server over real HTTP on 127.0.0.1 and prints
// its figures next to the targets of the performance issues.
//
// It starts the server binary as a child process with a fresh temporary data
// directory (fsync on, the default) and a langgraph.json that serves only the
// built-in echo graph, waits for GET /ok, runs the scenarios, stops the server
// with SIGTERM and waits for it. Without -server it first builds one with
// `go build ./cmd/server` (run it from the repository root).
//
//	go run ./cmd/loadgen -scenario all
//	go run ./cmd/loadgen -scenario runs
//	go run ./cmd/loadgen -scenario create-threads-c1,create-threads-c50 -duration 30s
//	go run ./cmd/loadgen -scenario runs-wait-c50 -otlp-sink
//
// With -database-url the servers keep their data in PostgreSQL: each group
// of servers (the groups below) gets a fresh schema with a random name in
// that database, created before its servers start and dropped after they
// stop. With -replicas N (and -database-url) each group is N server
// processes on its one schema, each with its own data directory and port,
// and the requests of every loop go round-robin over them (request i to
// replica i mod N). The scenario cross-replica-first-event (-replicas 2 or
// more) creates runs on one replica and joins their streams on another.
//
//	go run ./cmd/loadgen -database-url "$URL" -scenario create-threads-c50,runs-wait-c50
//	go run ./cmd/loadgen -database-url "$URL" -replicas 2 -scenario create-threads-c50,runs-wait-c50,cross-replica-first-event
//
// The scenario js-side-by-side (run only when named; scripts/jsbench.sh
// runs it) serves one LangGraph.js graph (-js-graph, from -js-dev-dir) by
// this server and by the JS server, `langgraphjs dev` installed from npm in
// -js-dev-dir, in rounds that alternate which server goes first, each on a
// freshly started server: run latency at c=1, runs/s at -c, and the peak
// memory of each server's whole process tree (graph workers included).
//
// With -otlp-sink the servers run with tracing on: loadgen serves an OTLP/HTTP
// endpoint on 127.0.0.1 that accepts and discards every export, and points
// OTEL_EXPORTER_OTLP_ENDPOINT at it. Without it, tracing is off unless
// loadgen's own environment names an endpoint.
//
// Scenarios that write threads (create-threads-*) share one server; the
// scenarios of the 100k data set (search-100k, rss-100k) share a second, fresh
// server that is seeded once, so that its thread count and its memory are
// exactly those of 100,000 threads. The run scenarios (the group `runs`) share
// a third server, so that rss-10k-runs reads the memory after the c50 runs;
// -fresh-servers gives each run scenario a server of its own instead.
//
// Every request loop is bounded both in count and in time (-duration). A
// missed target is reported as FAIL in the summary but does not change the
// exit status; only operational errors (the server does not start, requests
// fail, counts are wrong) make loadgen exit non-zero.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
	"syscall"
	"time"
)

// threadScenarioNames are the scenarios of threads and search.
var threadScenarioNames = []string{"create-threads-c1", "create-threads-c50", "search-100k", "rss-100k"}

// scenarioNames lists the scenarios in the order `all` runs them; `all`
// adds the replica scenarios when -replicas and -database-url allow them.
var scenarioNames = append(slices.Clone(threadScenarioNames), runScenarioNames...)

// replicaScenarioNames are the scenarios that need -replicas >= 2 and
// -database-url.
var replicaScenarioNames = []string{crossReplicaScenario}

// explicitScenarioNames run only when named: they need more than the server
// binary (jsSideBySide: Node and the JS server installed from npm).
var explicitScenarioNames = []string{jsSideBySide}

// benchGraphsFile is the langgraph.json that loadgen gives the server unless
// -config names another.
const benchGraphsFile = `{"graphs": {"echo": "builtin:echo"}}` + "\n"

type options struct {
	serverBin    string
	configFile   string
	scenarios    []string
	duration     time.Duration
	n            int
	c50N         int
	concurrency  int
	seedN        int
	seedConc     int
	searchN      int
	runsN        int
	runsC50N     int
	cancelN      int
	rssRuns      int
	idleSettle   time.Duration
	idleWindow   time.Duration
	memProfile   string
	freshServers bool
	warmup       int
	readyTO      time.Duration
	keep         bool
	inProcess    bool
	cpuProfile   string
	traceFile    string
	otlpSink     bool
	serverArgs   []string
	// serverEnv is added to the environment of the server processes.
	serverEnv   []string
	databaseURL string
	replicas    int
	// lockWaits samples the PostgreSQL lock waits of the measured loops.
	lockWaits bool
	crossN    int
	// jsDevDir holds jsSideBySide's graph, its langgraph.json and the JS
	// server installed from npm; jsGraph is the graph both servers run.
	jsDevDir string
	jsGraph  string
	jsRounds int
	jsC1N    int
	jsC50N   int
	// assistant is the graph the run scenarios run.
	assistant string
}

func main() {
	code, err := run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
	}
	os.Exit(code)
}

func parseFlags() (options, error) {
	var o options
	var scen, extra string
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.StringVar(&o.serverBin, "server", "", "server binary to run (default: go build ./cmd/server into a temp dir)")
	fs.StringVar(&o.configFile, "config", "", "langgraph.json passed to the server (default: one that serves only the built-in echo graph, written to the temp dir)")
	fs.StringVar(&scen, "scenario", "all", "comma-separated scenarios, or the group runs (the run scenarios), or all: "+strings.Join(scenarioNames, ", ")+"; with -replicas >= 2 and -database-url also "+strings.Join(replicaScenarioNames, ", ")+"; named only: "+strings.Join(explicitScenarioNames, ", "))
	fs.DurationVar(&o.duration, "duration", 2*time.Minute, "time cap of each request loop (a loop stops at its count or at this, whichever is first)")
	fs.IntVar(&o.n, "n", 2000, "requests of create-threads-c1")
	fs.IntVar(&o.c50N, "c50-n", 50000, "requests of create-threads-c50")
	fs.IntVar(&o.concurrency, "c", 50, "workers of create-threads-c50 and of the c50 run scenarios (and of unmeasured thread set-up)")
	fs.IntVar(&o.seedN, "seed-n", 100000, "threads seeded for search-100k and rss-100k")
	fs.IntVar(&o.seedConc, "seed-c", 64, "workers that seed threads")
	fs.IntVar(&o.searchN, "search-n", 200, "sequential requests per search/count measurement")
	fs.IntVar(&o.runsN, "runs-n", 2000, "runs of runs-wait-c1 and of first-event-c1 (sequential)")
	fs.IntVar(&o.runsC50N, "runs-c50-n", 10000, "runs of runs-wait-c50 and of runs-stream-c50 (each)")
	fs.IntVar(&o.cancelN, "cancel-n", 200, "cancels measured by cancel-latency")
	fs.IntVar(&o.rssRuns, "rss-runs", 10000, "c50 runs after which rss-10k-runs reads memory (and at half of it)")
	fs.DurationVar(&o.idleSettle, "idle-settle", 3*time.Second, "rss-10k-runs: quiet time before the idle CPU window")
	fs.DurationVar(&o.idleWindow, "idle-window", 5*time.Second, "rss-10k-runs: length of the idle CPU window")
	fs.IntVar(&o.warmup, "warmup", 50, "unmeasured requests before each sequential measurement")
	fs.DurationVar(&o.readyTO, "ready-timeout", 30*time.Second, "how long to wait for GET /ok after starting the server")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir (server binary, data dirs, server logs)")
	fs.BoolVar(&o.inProcess, "inprocess", false, "run the server inside loadgen instead of as a child (for -cpuprofile; RSS then includes loadgen)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write loadgen's CPU profile here (with -inprocess it covers the server)")
	fs.StringVar(&o.traceFile, "trace", "", "write loadgen's execution trace here (with -inprocess it covers the server; read it with go tool trace)")
	fs.BoolVar(&o.freshServers, "fresh-servers", false, "give every run scenario a fresh server (rss-10k-runs then makes its own runs) instead of one shared server")
	fs.StringVar(&o.memProfile, "memprofile", "", "write a heap profile here after the scenarios, before the servers stop (with -inprocess it covers the server)")
	fs.BoolVar(&o.otlpSink, "otlp-sink", false, "turn the servers' tracing on: export spans over OTLP/HTTP to a sink in loadgen that discards them (sets OTEL_EXPORTER_OTLP_ENDPOINT)")
	fs.StringVar(&o.databaseURL, "database-url", "", "PostgreSQL URL: each group of servers gets a fresh schema with a random name in this database (dropped when its servers stop); empty: the embedded bbolt file")
	fs.BoolVar(&o.lockWaits, "lock-waits", false, "with -database-url: sample the servers' PostgreSQL sessions waiting on locks (pg_stat_activity) during each measured loop and report the wait per run or request, by kind of lock")
	fs.IntVar(&o.replicas, "replicas", 1, "server processes per group on the same database (needs -database-url when above 1): each with its own data dir and port; requests go round-robin over them")
	fs.IntVar(&o.crossN, "cross-n", 300, "runs of "+crossReplicaScenario+" (sequential)")
	fs.StringVar(&o.jsDevDir, "js-dev-dir", filepath.Join("tests", "langgraphjs-dev"), jsSideBySide+": the folder with the graph's langgraph.json and `langgraphjs dev` installed (npm ci there)")
	fs.StringVar(&o.jsGraph, "js-graph", "js_echo", jsSideBySide+": the graph (assistant) both servers run; it must answer the input \"hi\" with the AI message \""+echoReply+"\"")
	fs.IntVar(&o.jsRounds, "js-rounds", 4, jsSideBySide+": rounds, alternating which server goes first")
	fs.IntVar(&o.jsC1N, "js-c1-n", 40, jsSideBySide+": sequential runs per server and round")
	fs.IntVar(&o.jsC50N, "js-c50-n", 500, jsSideBySide+": stateless runs on -c workers per server and round")
	fs.StringVar(&o.assistant, "assistant", "echo", "the graph (assistant) the run scenarios run, from -config; it must answer the input \"hi\" with the AI message \""+echoReply+"\"")
	fs.StringVar(&extra, "server-args", "", "extra space-separated arguments for the server")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	for _, s := range strings.Split(scen, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
		case s == "all":
			o.scenarios = append(o.scenarios, scenarioNames...)
			if o.replicas >= 2 && o.databaseURL != "" {
				o.scenarios = append(o.scenarios, replicaScenarioNames...)
			}
		case s == "runs":
			o.scenarios = append(o.scenarios, runScenarioNames...)
		case slices.Contains(scenarioNames, s):
			o.scenarios = append(o.scenarios, s)
		case slices.Contains(explicitScenarioNames, s):
			o.scenarios = append(o.scenarios, s)
		case slices.Contains(replicaScenarioNames, s):
			if o.replicas < 2 || o.databaseURL == "" {
				return o, fmt.Errorf("scenario %s needs -replicas 2 or more and -database-url", s)
			}
			o.scenarios = append(o.scenarios, s)
		default:
			return o, fmt.Errorf("unknown scenario %q (have %s, %s, %s, runs, all)", s, strings.Join(scenarioNames, ", "), strings.Join(replicaScenarioNames, ", "), strings.Join(explicitScenarioNames, ", "))
		}
	}
	o.scenarios = dedupe(o.scenarios)
	if len(o.scenarios) == 0 {
		return o, errors.New("no scenario selected")
	}
	if o.n < 1 || o.c50N < 1 || o.concurrency < 1 || o.seedN < 1 || o.seedConc < 1 || o.searchN < 1 || o.warmup < 0 ||
		o.runsN < 1 || o.runsC50N < 1 || o.cancelN < 1 || o.rssRuns < 2 || o.replicas < 1 || o.crossN < 1 ||
		o.jsRounds < 1 || o.jsC1N < 1 || o.jsC50N < 1 {
		return o, errors.New("counts must be positive")
	}
	if o.duration <= 0 || o.readyTO <= 0 || o.idleSettle < 0 || o.idleWindow <= 0 || o.idleSettle+o.idleWindow > 10*time.Minute {
		return o, errors.New("durations must be positive (idle settle and window at most 10m together)")
	}
	if o.lockWaits && o.databaseURL == "" {
		return o, errors.New("-lock-waits needs -database-url (bbolt has no lock waits to sample)")
	}
	if o.replicas > 1 && o.databaseURL == "" {
		return o, errors.New("-replicas above 1 needs -database-url (bbolt serves one process)")
	}
	if o.replicas > 1 && o.inProcess {
		return o, errors.New("-replicas above 1 needs server processes, not -inprocess")
	}
	o.serverArgs = strings.Fields(extra)
	runBody = echoRunBody(o.assistant)
	return o, nil
}

func dedupe(s []string) []string {
	var out []string
	for _, v := range s {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// run returns the exit code: 0, 1 on operational errors, 2 on bad flags.
func run() (int, error) {
	o, err := parseFlags()
	if errors.Is(err, flag.ErrHelp) {
		return 0, nil
	}
	if err != nil {
		return 2, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tmp, err := os.MkdirTemp("", "loadgen-")
	if err != nil {
		return 1, err
	}
	if o.keep {
		fmt.Printf("temp dir (kept): %s\n", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	if o.configFile == "" {
		// The scenarios need only the echo graph; a config of their own keeps
		// them independent of the graphs (and model credentials) that the
		// repository's langgraph.json names.
		o.configFile = filepath.Join(tmp, "langgraph.json")
		if err := os.WriteFile(o.configFile, []byte(benchGraphsFile), 0o644); err != nil {
			return 1, err
		}
	}

	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return 1, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return 1, err
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}

	if o.traceFile != "" {
		f, err := os.Create(o.traceFile)
		if err != nil {
			return 1, err
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return 1, err
		}
		defer func() {
			trace.Stop()
			f.Close()
		}()
	}

	if o.otlpSink {
		stopSink, err := startTracingSink(ctx, o.inProcess)
		if err != nil {
			return 1, err
		}
		defer stopSink()
	}

	if !o.inProcess && o.serverBin == "" {
		bin, err := buildServer(ctx, tmp)
		if err != nil {
			return 1, err
		}
		o.serverBin = bin
	}

	m := machineFacts(tmp, o)
	m.print(os.Stdout)

	r := &runner{opts: o, tmp: tmp, ctx: ctx, client: newClient(max(o.concurrency, o.seedConc))}
	opErr := r.runAll()
	r.report.print(os.Stdout, m)
	if opErr != nil {
		return 1, opErr
	}
	return 0, nil
}
