package graph

import (
	"fmt"

	"github.com/google/uuid"

	"agentserver/internal/channels"
)

// Task is one node scheduled to run in a super-step. Input, when non-nil,
// is the argument of a Send: the node gets it as its state instead of the
// thread's values, as LangGraph's Send does.
type Task struct {
	Node  string
	Input State
	// interrupts are the ids of the interrupts the task paused on, so that
	// a resume map ({interrupt_id: value}) reaches the right task.
	interrupts []string
}

// stateOr returns what the task's node gets as its state: its Send input,
// or the thread's values.
func (t Task) stateOr(values State) State {
	if t.Input != nil {
		return t.Input
	}
	return values
}

// ParseGoto reads a command's goto: a node name, a Send object {node,
// input} (or {node, args}), or a list of them. End stays in the list; a Send's null input is
// an empty state, any other non-object input is an error.
func ParseGoto(g any) ([]Task, error) {
	switch v := g.(type) {
	case nil:
		return nil, nil
	case string:
		return []Task{{Node: v}}, nil
	case map[string]any:
		return parseSend(v)
	case []any:
		var out []Task
		for _, e := range v {
			tasks, err := ParseGoto(e)
			if err != nil {
				return nil, err
			}
			out = append(out, tasks...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: goto must be a node name, a Send {node, input} or a list of them", channels.ErrInvalidUpdate)
}

// parseSend reads a Send: {node, input} as the SDKs write it, or {node,
// args} as LangGraph.js serializes its Send class (RemoteGraph sends that).
func parseSend(send map[string]any) ([]Task, error) {
	node, ok := send["node"].(string)
	if !ok {
		return nil, fmt.Errorf("%w: a Send needs a node name", channels.ErrInvalidUpdate)
	}
	input, ok := send["input"]
	if !ok {
		input = send["args"]
	}
	switch in := input.(type) {
	case nil:
		return []Task{{Node: node, Input: State{}}}, nil
	case map[string]any:
		return []Task{{Node: node, Input: in}}, nil
	}
	return nil, fmt.Errorf("%w: the input of a Send to %q must be an object", channels.ErrInvalidUpdate, node)
}

// TaskNames lists the nodes of tasks, in order (a node sent to twice is
// listed twice).
func TaskNames(tasks []Task) []string {
	names := make([]string, 0, len(tasks))
	for _, t := range tasks {
		names = append(names, t.Node)
	}
	return names
}

func withoutEnd(tasks []Task) []Task {
	var out []Task
	for _, t := range tasks {
		if t.Node != End {
			out = append(out, t)
		}
	}
	return out
}

// CheckpointTasks returns the Next and Tasks of a checkpoint whose pending
// work is tasks; End is not a task and is left out.
func CheckpointTasks(tasks []Task) ([]string, []CheckpointTask) {
	tasks = withoutEnd(tasks)
	next, out := TaskNames(tasks), make([]CheckpointTask, 0, len(tasks))
	for _, t := range tasks {
		ct := CheckpointTask{ID: uuid.NewString(), Name: t.Node, Interrupts: []any{}}
		if t.Input != nil {
			ct.Input = t.Input
		}
		out = append(out, ct)
	}
	return next, out
}

// PendingTasks returns what a checkpoint left to run: its Next, with the
// Send inputs and interrupt ids of its tasks. End, which older checkpoints
// may list, is left out.
func PendingTasks(cp Checkpoint) []Task {
	var out []Task
	for i, name := range cp.Next {
		if name == End {
			continue
		}
		t := Task{Node: name}
		if i < len(cp.Tasks) && cp.Tasks[i].Name == name {
			t.Input, _ = cp.Tasks[i].Input.(map[string]any)
			t.interrupts = interruptIDs(cp.Tasks[i].Interrupts)
		}
		out = append(out, t)
	}
	return out
}

func interruptIDs(interrupts []any) []string {
	var ids []string
	for _, it := range interrupts {
		if m, ok := it.(map[string]any); ok {
			if id, ok := m["id"].(string); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids
}
