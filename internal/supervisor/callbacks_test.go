package supervisor_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"agentserver/internal/supervisor"
	"agentserver/internal/testutil"
)

// A deepagents JavaScript supervisor names its thread (callbackThreadId)
// in the input of a task's first run only. The server records it in the
// task thread's metadata, so that a later run of the task (an update)
// reports to the supervisor even when created where that first run was
// not seen: on another replica or after a restart. Here the later run is
// followed by a notifier that saw nothing before.
func TestJSTaskCallbackSurvivesInThreadMetadata(t *testing.T) {
	srv := testutil.StartServer(t, testutil.Options{Graphs: testutil.TestGraphs})
	newThread := func() string { return srv.Must(200, "POST", "/threads", nil).Object(t)["thread_id"].(string) }
	sup := newThread()

	// The first run names the supervisor: the server's notifier records it.
	first := newThread()
	srv.Must(200, "POST", "/threads/"+first+"/runs/wait", map[string]any{"assistant_id": "echo",
		"input": map[string]any{"callbackThreadId": sup, "messages": []any{map[string]any{"role": "user", "content": "go"}}}})
	testutil.Eventually(t, 10*time.Second, "callback_thread_id in the task thread's metadata", func() bool {
		md, _ := srv.Must(200, "GET", "/threads/"+first, nil).Object(t)["metadata"].(map[string]any)
		return md["callback_thread_id"] == sup
	})

	// A task thread whose first run this server's notifier never saw
	// (its metadata written as that run's server wrote it), and a notifier
	// that knows nothing of it: the task's update run is pushed.
	task := newThread()
	srv.Must(200, "PATCH", "/threads/"+task, map[string]any{"metadata": map[string]any{"callback_thread_id": sup}})
	fresh := supervisor.NewNotifier(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	fresh.Bind(srv.Threads, srv.Runs)
	fresh.FollowStoredCallbacks()
	t.Cleanup(fresh.Close)

	gate := "callback-" + task
	defer testutil.Release(gate)
	created := srv.Must(200, "POST", "/threads/"+task+"/runs", map[string]any{"assistant_id": "gated", "input": map[string]any{"gate": gate}}).Object(t)
	runID := created["run_id"].(string)
	srv.Must(200, "POST", "/threads/"+sup+"/state", map[string]any{"values": map[string]any{supervisor.JSChannel: map[string]any{
		task: map[string]any{"taskId": task, "agentName": "gated", "threadId": task, "runId": runID, "status": "running"},
	}}})
	run, err := srv.Runs.Get(context.Background(), nil, mustUUID(t, runID))
	if err != nil {
		t.Fatal(err)
	}
	fresh.RunCreated(run)
	testutil.Release(gate)
	testutil.Eventually(t, 10*time.Second, "the update run's end pushed into the supervisor's asyncTasks", func() bool {
		st, err := srv.Threads.GetState(context.Background(), mustUUID(t, sup), nil)
		if err != nil {
			return false
		}
		tasks, _ := st.Values[supervisor.JSChannel].(map[string]any)
		rec, _ := tasks[task].(map[string]any)
		return rec["status"] == "success"
	})
}
