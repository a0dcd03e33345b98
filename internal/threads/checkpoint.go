package threads

import (
	"agentserver/internal/graph"
	"agentserver/internal/storage"
)

// ExecutorCheckpoint converts a stored checkpoint into the executor's
// type. The two share their maps and lists: neither side modifies them
// (graph's invariant on immutable state).
func ExecutorCheckpoint(cp storage.Checkpoint) graph.Checkpoint {
	tasks := make([]graph.CheckpointTask, len(cp.Tasks))
	for i, t := range cp.Tasks {
		tasks[i] = graph.CheckpointTask(t)
	}
	return graph.Checkpoint{
		ThreadID: cp.ThreadID, CheckpointID: cp.CheckpointID, CheckpointNS: cp.CheckpointNS, ParentID: cp.ParentID,
		CreatedAt: cp.CreatedAt, Values: cp.Values, Metadata: cp.Metadata, Next: cp.Next, Tasks: tasks, RunID: cp.RunID,
		Native: cp.Native,
	}
}

// StoredCheckpoint converts an executor's checkpoint into the stored
// record.
func StoredCheckpoint(cp graph.Checkpoint) storage.Checkpoint {
	return storage.Checkpoint{
		ThreadID: cp.ThreadID, CheckpointID: cp.CheckpointID, CheckpointNS: cp.CheckpointNS, ParentID: cp.ParentID,
		CreatedAt: cp.CreatedAt, Values: cp.Values, Metadata: cp.Metadata, Next: cp.Next, Tasks: StoredTasks(cp.Tasks), RunID: cp.RunID,
		Native: cp.Native,
	}
}

// StoredTasks converts an executor's checkpoint tasks into stored ones.
func StoredTasks(tasks []graph.CheckpointTask) []storage.CheckpointTask {
	out := make([]storage.CheckpointTask, len(tasks))
	for i, t := range tasks {
		out[i] = storage.CheckpointTask(t)
	}
	return out
}
