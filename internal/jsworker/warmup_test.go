package jsworker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"agentserver/internal/jsworker"
)

// A graph worker warms LangGraph.js up in memory before it takes runs: its
// start reports the warm-up's runs (WarmUpRuns at most, within
// WarmUpBudget), and none when WarmUpRuns is 0.
func TestWorkerWarmsUpBeforeTakingRuns(t *testing.T) {
	dir, _ := fixture(t)
	for _, runs := range []int{0, 50} {
		var logs bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		p, err := jsworker.Start(ctx, jsworker.Options{ProjectDir: dir, CacheDir: t.TempDir(), WarmUpRuns: runs,
			Log:    slog.New(slog.NewJSONHandler(&logs, nil)),
			Graphs: map[string]jsworker.Entry{"js_chat": {Path: filepath.Join(dir, "src", "chat.ts"), Export: "graph"}}})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		p.Close(ctx)
		cancel()
		started := startRecord(t, logs.Bytes())
		done, ms := started["warm_up_runs"], started["warm_up_ms"]
		t.Logf("WarmUpRuns %d: %v runs in %v ms", runs, done, ms)
		switch {
		case runs == 0 && done != 0.0:
			t.Errorf("WarmUpRuns 0: the worker made %v warm-up runs", done)
		case runs > 0 && !(done.(float64) >= 1 && done.(float64) <= float64(runs)):
			t.Errorf("WarmUpRuns %d: the worker made %v warm-up runs", runs, done)
		case started["level"] != "INFO" || strings.Contains(logs.String(), "warm-up stopped early"):
			t.Errorf("the warm-up failed: %s", logs.Bytes())
		case ms.(float64) > float64(jsworker.WarmUpBudget.Milliseconds())+500:
			t.Errorf("the warm-up took %v ms, beyond its budget of %v", ms, jsworker.WarmUpBudget)
		}
	}
}

// startRecord finds the pool's "graph workers started" record in its JSON
// log.
func startRecord(t *testing.T, logs []byte) map[string]any {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(logs))
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "graph workers started" {
			return rec
		}
	}
	t.Fatalf("no \"graph workers started\" record in the log:\n%s", logs)
	return nil
}
