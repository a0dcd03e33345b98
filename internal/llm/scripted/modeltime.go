package scripted

import (
	"fmt"
	"time"
)

// ToolLoopSteps scripts an agent loop of k tool-calling responses (ls and
// write_todos) and a final text, each response stamping its chunks with
// their send time (WithSendTimestamps).
func ToolLoopSteps(k int) []Step {
	steps := make([]Step, 0, k+1)
	for i := range k {
		steps = append(steps, ToolCalls(
			Call("ls", map[string]any{"path": "/"}),
			Call("write_todos", map[string]any{"todos": []any{map[string]any{"content": fmt.Sprintf("step %d", i), "status": "in_progress"}}}),
		).WithSendTimestamps())
	}
	return append(steps, Text("All done.").Split(3).WithSendTimestamps())
}

// ModelTime returns the model time of a run as the server saw it: for each
// call, from having read the request body (Request.Received) to sending the
// finish delta of its response (the last send marker of the AI message the
// call produced). reqs are the run's requests in order, messages the run's
// messages; every response must have been sent WithSendTimestamps.
func ModelTime(reqs []Request, messages []any) (time.Duration, error) {
	var ais []map[string]any
	for _, m := range messages {
		if mm, _ := m.(map[string]any); mm["type"] == "ai" {
			ais = append(ais, mm)
		}
	}
	if len(ais) != len(reqs) {
		return 0, fmt.Errorf("%d AI messages for %d model requests", len(ais), len(reqs))
	}
	var total time.Duration
	for i, ai := range ais {
		content, _ := ai["content"].(string)
		sent := SendTimes(content)
		if len(sent) == 0 {
			return 0, fmt.Errorf("AI message %d has no send marker: %q", i, content)
		}
		total += sent[len(sent)-1].Sub(reqs[i].Received)
	}
	return total, nil
}
