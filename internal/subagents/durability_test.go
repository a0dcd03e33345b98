package subagents

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/agent"
	"agentserver/internal/storage"
	"agentserver/internal/testutil/testdb"
	"agentserver/internal/tools"
)

func openDB(t *testing.T) *storage.DB {
	t.Helper()
	return testdb.Open(t)
}

func putExecutions(t *testing.T, db *storage.DB, es ...storage.SubagentExecution) {
	t.Helper()
	err := db.Update(context.Background(), func(tx *storage.Tx) error {
		for _, e := range es {
			if err := tx.PutSubagent(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func getExecution(t *testing.T, db *storage.DB, run uuid.UUID, call string) storage.SubagentExecution {
	t.Helper()
	var e storage.SubagentExecution
	err := db.View(context.Background(), func(tx *storage.Tx) error {
		var err error
		e, err = tx.GetSubagent(run, call)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRestartRecovery: executions a crash left pending or running become
// interrupted at start-up; a retried parent run that reaches the same task
// call gets the recorded result (interrupted, or the finished one) and does
// not run the subagent again.
func TestRestartRecovery(t *testing.T) {
	db := openDB(t)
	run, thread := uuid.New(), uuid.New()
	started := time.Now().UTC().Add(-time.Minute)
	exec := func(call, status string) storage.SubagentExecution {
		return storage.SubagentExecution{ParentRunID: run, ThreadID: thread, ToolCallID: call, Type: GeneralPurpose, Description: call,
			Status: status, Model: "m1", StartedAt: started, Usage: map[string]any{"input_tokens": 3.0, "output_tokens": 2.0, "total_tokens": 5.0}}
	}
	done := exec("call_done", "completed")
	done.Result = "the finished answer"
	putExecutions(t, db, exec("call_running", "running"), exec("call_pending", "pending"), done)

	n, err := RecoverInterrupted(context.Background(), db, "")
	if err != nil || n != 2 {
		t.Fatalf("RecoverInterrupted = %d, %v; want 2", n, err)
	}
	for _, call := range []string{"call_running", "call_pending"} {
		e := getExecution(t, db, run, call)
		if e.Status != "interrupted" || e.EndedAt == nil || e.Error == "" || !e.StartedAt.Equal(started) {
			t.Fatalf("%s after recovery = %+v", call, e)
		}
	}
	if e := getExecution(t, db, run, "call_done"); e.Status != "completed" || e.EndedAt != nil {
		t.Fatalf("a finished execution was touched: %+v", e)
	}
	if n, err := RecoverInterrupted(context.Background(), db, ""); err != nil || n != 0 {
		t.Fatalf("second recovery = %d, %v; want 0", n, err)
	}

	// No Models and no Live: running a subagent here would panic, so a
	// passing call proves that the record answered it.
	d, err := New(Config{}, &agent.Spec{Name: "lead", Model: agent.Model{Name: "m1"}}, Env{DB: db}, 0)
	if err != nil {
		t.Fatal(err)
	}
	task := d.Tools()[0]
	var events []any
	call := func(id string) tools.Result {
		res, err := task.Call(context.Background(), tools.Call{ID: id, ThreadID: thread.String(),
			Args:   map[string]any{"description": "again", "prompt": "do it", "subagent_type": GeneralPurpose},
			Config: map[string]any{"configurable": map[string]any{"run_id": run.String()}},
			Emit:   func(p any) { events = append(events, p) }})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call("call_running")
	if !strings.HasPrefix(res.Content, "Task failed. Error: Interrupted by a server restart") || res.Metadata["subagent_status"] != "failed" {
		t.Fatalf("interrupted execution answered %q %v", res.Content, res.Metadata)
	}
	if u, _ := res.Metadata["subagent_token_usage"].(map[string]any); u["total_tokens"] != 5.0 {
		t.Fatalf("the recorded usage is not reported: %v", res.Metadata)
	}
	res = call("call_done")
	if res.Content != "Task Succeeded. Result: the finished answer" || res.Metadata["subagent_model_name"] != "m1" {
		t.Fatalf("finished execution answered %q %v", res.Content, res.Metadata)
	}
	if len(events) != 0 {
		t.Fatalf("a recorded answer must not emit task events: %v", events)
	}
	if e := getExecution(t, db, run, "call_running"); e.Status != "interrupted" {
		t.Fatalf("answering from the record changed it: %+v", e)
	}
}

// TestStepLog: steps reach the execution record while the subagent runs,
// without the subagent waiting for the writes, and nothing is written after
// close returns (the terminal record follows it).
func TestStepLog(t *testing.T) {
	db := openDB(t)
	run := uuid.New()
	putExecutions(t, db, storage.SubagentExecution{ParentRunID: run, ToolCallID: "s1", Status: "running", StartedAt: time.Now().UTC()})
	d, err := New(Config{}, &agent.Spec{Model: agent.Model{Name: "m"}}, Env{DB: db}, 0)
	if err != nil {
		t.Fatal(err)
	}
	l := d.startStepLog(run, "s1")
	for i := range 5 {
		l.add(map[string]any{"type": "ai", "content": fmt.Sprint("step ", i)})
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(getExecution(t, db, run, "s1").Steps) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("steps not written: %v", getExecution(t, db, run, "s1").Steps)
		}
		time.Sleep(time.Millisecond)
	}
	steps := getExecution(t, db, run, "s1").Steps
	for i, s := range steps {
		if s["content"] != fmt.Sprint("step ", i) {
			t.Fatalf("steps out of order: %v", steps)
		}
	}
	l.add(map[string]any{"type": "tool", "content": "late"})
	l.close()
	n := len(getExecution(t, db, run, "s1").Steps)
	l.add(map[string]any{"type": "ai", "content": "after close"})
	l.close() // idempotent
	if got := len(getExecution(t, db, run, "s1").Steps); got != n || n < 5 || n > 6 {
		t.Fatalf("steps after close: %d then %d", n, got)
	}

	// Without a database (or a run id) the log only drops steps.
	nolog := newDelegation(t, Config{}).startStepLog(run, "s2")
	nolog.add(map[string]any{"type": "ai"})
	nolog.close()
}
