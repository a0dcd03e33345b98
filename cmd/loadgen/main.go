// Command loadgen measures the server over real HTTP on 127.0.0.1 and prints
// its figures next to the targets of the performance issue.
//
// It starts the server binary as a child process with a fresh temporary data
// directory (fsync on, the default), waits for GET /ok, runs the scenarios,
// stops the server with SIGTERM and waits for it. Without -server it first
// builds one with `go build ./cmd/server` (run it from the repository root).
//
//	go run ./cmd/loadgen -scenario all
//	go run ./cmd/loadgen -scenario create-threads-c1,create-threads-c50 -duration 30s
//
// Scenarios that write (create-threads-*) share one server; the scenarios of
// the 100k data set (search-100k, rss-100k) share a second, fresh server that
// is seeded once, so that its thread count and its memory are exactly those of
// 100,000 threads.
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
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"
)

// scenarioNames lists the scenarios in the order `all` runs them.
var scenarioNames = []string{"create-threads-c1", "create-threads-c50", "search-100k", "rss-100k"}

type options struct {
	serverBin   string
	configFile  string
	scenarios   []string
	duration    time.Duration
	n           int
	c50N        int
	concurrency int
	seedN       int
	seedConc    int
	searchN     int
	warmup      int
	readyTO     time.Duration
	keep        bool
	inProcess   bool
	cpuProfile  string
	serverArgs  []string
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
	fs.StringVar(&o.configFile, "config", "./langgraph.json", "langgraph.json passed to the server")
	fs.StringVar(&scen, "scenario", "all", "comma-separated scenarios, or all: "+strings.Join(scenarioNames, ", "))
	fs.DurationVar(&o.duration, "duration", 2*time.Minute, "time cap of each request loop (a loop stops at its count or at this, whichever is first)")
	fs.IntVar(&o.n, "n", 2000, "requests of create-threads-c1")
	fs.IntVar(&o.c50N, "c50-n", 50000, "requests of create-threads-c50")
	fs.IntVar(&o.concurrency, "c", 50, "workers of create-threads-c50")
	fs.IntVar(&o.seedN, "seed-n", 100000, "threads seeded for search-100k and rss-100k")
	fs.IntVar(&o.seedConc, "seed-c", 64, "workers that seed threads")
	fs.IntVar(&o.searchN, "search-n", 200, "sequential requests per search/count measurement")
	fs.IntVar(&o.warmup, "warmup", 50, "unmeasured requests before each sequential measurement")
	fs.DurationVar(&o.readyTO, "ready-timeout", 30*time.Second, "how long to wait for GET /ok after starting the server")
	fs.BoolVar(&o.keep, "keep", false, "keep the temp dir (server binary, data dirs, server logs)")
	fs.BoolVar(&o.inProcess, "inprocess", false, "run the server inside loadgen instead of as a child (for -cpuprofile; RSS then includes loadgen)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write loadgen's CPU profile here (with -inprocess it covers the server)")
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
		case slices.Contains(scenarioNames, s):
			o.scenarios = append(o.scenarios, s)
		default:
			return o, fmt.Errorf("unknown scenario %q (have %s, all)", s, strings.Join(scenarioNames, ", "))
		}
	}
	o.scenarios = dedupe(o.scenarios)
	if len(o.scenarios) == 0 {
		return o, errors.New("no scenario selected")
	}
	if o.n < 1 || o.c50N < 1 || o.concurrency < 1 || o.seedN < 1 || o.seedConc < 1 || o.searchN < 1 || o.warmup < 0 {
		return o, errors.New("counts must be positive")
	}
	if o.duration <= 0 || o.readyTO <= 0 {
		return o, errors.New("durations must be positive")
	}
	o.serverArgs = strings.Fields(extra)
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
