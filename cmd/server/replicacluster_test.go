package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/storage"
	"agentserver/internal/testutil/pgtest"
)

// replicaCluster is server binaries ("replicas") sharing one fresh
// PostgreSQL schema, with one agent ("slow") whose model is a scripted
// OpenAI-compatible server streaming each reply slowly, so that runs are
// still executing (mostly mid-stream) when a replica is killed.
type replicaCluster struct {
	bin    string
	dbURL  string
	config string
	lease  string
	// jobs is the replicas' --n-jobs (workers per replica).
	jobs  string
	model *scripted.Server
	// db reads the shared records directly (attempts and owners, which the
	// HTTP API does not show).
	db *storage.DB
}

// skipWithoutReplicas skips a test of server binaries sharing PostgreSQL
// when no test database is configured or under -short.
func skipWithoutReplicas(t *testing.T) {
	t.Helper()
	if !pgtest.Enabled() {
		t.Skip("replicas need PostgreSQL: set " + pgtest.EnvURL)
	}
	if testing.Short() {
		t.Skip("builds and runs the server binary")
	}
}

// replica is one server binary of a cluster.
type replica struct {
	*serverProcess
	// id is the replica's id (its data directory's replica-id), which runs
	// it executes carry as their Owner.
	id string
}

// newReplicaCluster creates the schema, the model (each reply takes
// modelDelay: a third before its first delta, a third between each of its
// three deltas) and the configuration that the replicas it starts (start)
// share; lease is their --run-lease flag.
func newReplicaCluster(tb testing.TB, bin, lease string, modelDelay time.Duration) *replicaCluster {
	tb.Helper()
	c := &replicaCluster{bin: bin, dbURL: pgtest.FreshSchema(tb), lease: lease, jobs: "16"}
	model := scripted.New()
	tb.Cleanup(model.Close)
	c.model = model
	model.SetResponder(func(req scripted.ChatRequest) scripted.Step {
		return scripted.Echo(req).WithLatency(modelDelay/3, modelDelay/3)
	})
	dir := tb.TempDir()
	spec := fmt.Sprintf("name: slow\ndescription: replies after a delay\nmodel:\n  name: test-model\n  base_url: %s\n  max_retries: 0\nsystem_prompt: You reply.\ntools: []\n", model.URL())
	c.config = filepath.Join(dir, "langgraph.json")
	for name, text := range map[string]string{"agent.yaml": spec, "langgraph.json": `{"graphs": {"slow": "./agent.yaml"}}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	leaseDur, err := time.ParseDuration(lease)
	if err != nil {
		tb.Fatal(err)
	}
	db, err := storage.OpenPostgres(c.dbURL, storage.Options{Lease: leaseDur})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	c.db = db
	return c
}

// start starts one more replica on a data directory of its own.
func (c *replicaCluster) start(tb testing.TB) *replica {
	tb.Helper()
	return c.startAs(tb, "")
}

// startAs starts one more replica whose database sessions carry app (when
// not "") as their application_name, so that a test can find them.
func (c *replicaCluster) startAs(tb testing.TB, app string) *replica {
	tb.Helper()
	dataDir := tb.TempDir()
	dbURL := c.dbURL
	if app != "" {
		u, err := url.Parse(dbURL)
		if err != nil {
			tb.Fatal(err)
		}
		q := u.Query()
		q.Set("application_name", app)
		u.RawQuery = q.Encode()
		dbURL = u.String()
	}
	p := startProcessWith(tb, c.bin, []string{"OPENAI_API_KEY=test"},
		"--data-dir", dataDir, "--config", c.config, "--database-url", dbURL,
		"--run-lease", c.lease, "--n-jobs", c.jobs)
	raw, err := os.ReadFile(filepath.Join(dataDir, "replica-id"))
	if err != nil {
		tb.Fatal(err)
	}
	return &replica{serverProcess: p, id: strings.TrimSpace(string(raw))}
}

// kill9 kills the replica with SIGKILL and reaps it.
func (r *replica) kill9(tb testing.TB) {
	tb.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	r.cmd.Wait()
}

// modelCalls counts the chat requests the model received, by the text of
// their last user message.
func (c *replicaCluster) modelCalls() map[string]int {
	calls := map[string]int{}
	for _, r := range c.model.Requests() {
		calls[r.Chat.LastUserText()]++
	}
	return calls
}

// record is the stored record of a run.
func (c *replicaCluster) record(tb testing.TB, id string) storage.Run {
	tb.Helper()
	var r storage.Run
	err := c.db.View(context.Background(), func(tx *storage.Tx) error {
		var err error
		r, err = tx.GetRun(uuid.MustParse(id))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// clusterRun is a run created on a replica of a cluster.
type clusterRun struct {
	thread, run, text string
}

// createRun creates a thread and one run of the slow agent on it through
// r, with webhook (if not "") to be told of its end.
func createRun(tb testing.TB, client *http.Client, r *replica, text, webhook string) clusterRun {
	tb.Helper()
	code, th, err := postJSON(tb, client, r.url+"/threads", map[string]any{})
	if err != nil || code != 200 {
		tb.Fatalf("create thread on %s: %d %v", r.url, code, err)
	}
	body := map[string]any{
		"assistant_id": "slow",
		"input":        map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}},
	}
	if webhook != "" {
		body["webhook"] = webhook
	}
	tid := th["thread_id"].(string)
	code, run, err := postJSON(tb, client, r.url+"/threads/"+tid+"/runs", body)
	if err != nil || code != 200 {
		tb.Fatalf("create run on %s: %d %v %v", r.url, code, err, run)
	}
	return clusterRun{thread: tid, run: run["run_id"].(string), text: text}
}
