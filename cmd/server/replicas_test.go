package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"agentserver/internal/storage"
)

// webhookCounter is a webhook receiver on 127.0.0.1 counting the
// deliveries of each run.
type webhookCounter struct {
	srv *httptest.Server

	mu       sync.Mutex
	count    map[string]int
	statuses map[string][]string
}

func newWebhookCounter(tb testing.TB) *webhookCounter {
	w := &webhookCounter{count: map[string]int{}, statuses: map[string][]string{}}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var body struct {
			RunID  string `json:"run_id"`
			Status string `json:"status"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		w.mu.Lock()
		w.count[body.RunID]++
		w.statuses[body.RunID] = append(w.statuses[body.RunID], body.Status)
		w.mu.Unlock()
	}))
	tb.Cleanup(w.srv.Close)
	return w
}

// deliveries returns how many webhooks of run arrived and their statuses.
func (w *webhookCounter) deliveries(run string) (int, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.count[run], append([]string(nil), w.statuses[run]...)
}

// TestThreeReplicasSurviveAKill9 runs three replicas on one PostgreSQL
// schema, spreads runs of a slow agent over them, kills one with SIGKILL
// while several of its runs execute, and requires every run to end success
// exactly once on the survivors: the killed replica's runs on their second
// attempt, each thread with one input and one reply, each webhook once.
func TestThreeReplicasSurviveAKill9(t *testing.T) {
	skipWithoutReplicas(t)
	bin := buildServer(t)
	c := newReplicaCluster(t, bin, "3s", 3*time.Second)
	hooks := newWebhookCounter(t)
	reps := []*replica{c.start(t), c.start(t), c.start(t)}
	victim, survivors := reps[1], []*replica{reps[0], reps[2]}
	client := &http.Client{Timeout: 10 * time.Second}

	const nRuns = 30
	runs := make([]clusterRun, nRuns)
	for i := range runs {
		runs[i] = createRun(t, client, reps[i%3], fmt.Sprintf("m-%d", i), hooks.srv.URL)
	}

	// Kill the victim once several runs execute there.
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := 0
		for _, r := range runs {
			if rec := c.record(t, r.run); rec.Status == storage.RunRunning && rec.Owner == victim.id {
				n++
			}
		}
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d runs running on replica 2 after 30s\n%s", n, victim.logs)
		}
		time.Sleep(20 * time.Millisecond) // polling child processes with a deadline
	}
	victim.kill9(t)
	// Nothing the victim held can change until its leases lapse (3s): the
	// records read now tell which runs it was executing.
	onVictim := map[string]bool{}
	for _, r := range runs {
		if rec := c.record(t, r.run); rec.Status == storage.RunRunning && rec.Owner == victim.id {
			onVictim[r.run] = true
		}
	}
	if len(onVictim) == 0 {
		t.Fatal("no run was executing on the killed replica")
	}

	deadline = time.Now().Add(60 * time.Second)
	for i, r := range runs {
		for {
			var run map[string]any
			s := survivors[i%2]
			if code := getJSON(t, client, s.url+"/threads/"+r.thread+"/runs/"+r.run, &run); code != 200 {
				t.Fatalf("run %s: GET on %s answered %d", r.run, s.url, code)
			}
			if run["status"] != "pending" && run["status"] != "running" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("run %s (on the killed replica: %v) still %v after 60s\nreplica 1:\n%s\nreplica 3:\n%s", r.run, onVictim[r.run], run["status"], reps[0].logs, reps[2].logs)
			}
			time.Sleep(20 * time.Millisecond) // polling child processes with a deadline
		}
	}

	// Every run ended once, success; the victim's on a survivor, retried.
	endedOnVictim, retriedElsewhere := 0, 0
	for _, r := range runs {
		rec := c.record(t, r.run)
		if rec.Status != storage.RunSuccess || rec.EndedAt == nil {
			t.Errorf("run %s ended %s (ended_at %v): %s", r.run, rec.Status, rec.EndedAt, rec.Error)
		}
		switch {
		case onVictim[r.run]:
			if rec.Attempt != 2 || rec.Owner == victim.id || rec.Owner == "" {
				t.Errorf("run %s was executing on the killed replica: attempt %d, ended by %q, want attempt 2 on a survivor", r.run, rec.Attempt, rec.Owner)
			}
		case rec.Owner == victim.id:
			endedOnVictim++ // it ended before the kill
		}
		if rec.Attempt > 1 && !onVictim[r.run] {
			retriedElsewhere++
		}
	}
	if retriedElsewhere > 0 {
		t.Logf("%d runs not on the killed replica were retried too (a survivor's lease lapsed under load)", retriedElsewhere)
	}

	// The model was called once per attempt (a killed attempt may have
	// died before calling it).
	calls, midCall := c.modelCalls(), 0
	for _, r := range runs {
		rec := c.record(t, r.run)
		if onVictim[r.run] && calls[r.text] == 2 {
			midCall++
		}
		if n := calls[r.text]; n > rec.Attempt || n < 1 || n < rec.Attempt-1 {
			t.Errorf("run %s (attempt %d, on the killed replica: %v) called the model %d times", r.run, rec.Attempt, onVictim[r.run], n)
		}
	}

	// Each thread holds its input and one reply.
	for _, r := range runs {
		var state map[string]any
		getJSON(t, client, survivors[0].url+"/threads/"+r.thread+"/state", &state)
		values, _ := state["values"].(map[string]any)
		msgs, _ := values["messages"].([]any)
		var kinds, texts []string
		for _, m := range msgs {
			mm, _ := m.(map[string]any)
			kind, _ := mm["type"].(string)
			text, _ := mm["content"].(string)
			kinds, texts = append(kinds, kind), append(texts, text)
		}
		if len(msgs) != 2 || kinds[0] != "human" || texts[0] != r.text || kinds[1] != "ai" || texts[1] != "echo: "+r.text {
			t.Errorf("thread %s (run %s, on the killed replica: %v) holds %v %q, want one human %q and one ai reply", r.thread, r.run, onVictim[r.run], kinds, texts, r.text)
		}
	}

	// Webhooks: the survivors send each of theirs; stopping them
	// gracefully waits for deliveries in flight, so late duplicates are
	// counted too. A run that ended on the victim just before the kill may
	// have lost its webhook with the process (the end is committed first).
	deadline = time.Now().Add(30 * time.Second)
	for _, r := range runs {
		for {
			if n, _ := hooks.deliveries(r.run); n > 0 || c.record(t, r.run).Owner == victim.id {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no webhook for run %s after 30s", r.run)
			}
			time.Sleep(20 * time.Millisecond) // polling child processes with a deadline
		}
	}
	for _, s := range survivors {
		s.cmd.Process.Signal(syscall.SIGTERM)
		s.cmd.Wait()
	}
	lostOnVictim := 0
	for _, r := range runs {
		n, statuses := hooks.deliveries(r.run)
		owner := c.record(t, r.run).Owner
		switch {
		case owner == victim.id && n == 0:
			lostOnVictim++
		case n != 1:
			t.Errorf("run %s (ended by %s, on the killed replica: %v): %d webhooks %v, want exactly 1", r.run, owner, onVictim[r.run], n, statuses)
		case statuses[0] != storage.RunSuccess:
			t.Errorf("run %s: webhook status %s", r.run, statuses[0])
		}
	}
	t.Logf("%d runs; %d executing on the killed replica (%d of them in a model call), retried on survivors; %d had ended there before the kill (%d of their webhooks lost with it)",
		nRuns, len(onVictim), midCall, endedOnVictim, lostOnVictim)
}
