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
	finished, err := finishTimes(reqs, messages)
	if err != nil {
		return 0, err
	}
	var total time.Duration
	for i, f := range finished {
		total += f.Sub(reqs[i].Received)
	}
	return total, nil
}

// StepGaps returns, for each model call after the first, the time from the
// previous call's finish delta being sent to this call's request having
// been read: everything the client did between two model calls (parsing
// the answer, reducers, checkpoints, the tools, building and sending the
// next request). Arguments as for ModelTime.
func StepGaps(reqs []Request, messages []any) ([]time.Duration, error) {
	finished, err := finishTimes(reqs, messages)
	if err != nil {
		return nil, err
	}
	gaps := make([]time.Duration, 0, len(reqs))
	for i := 1; i < len(reqs); i++ {
		gaps = append(gaps, reqs[i].Received.Sub(finished[i-1]))
	}
	return gaps, nil
}

// finishTimes returns when each call's finish delta was sent.
func finishTimes(reqs []Request, messages []any) ([]time.Time, error) {
	var ais []map[string]any
	for _, m := range messages {
		if mm, _ := m.(map[string]any); mm["type"] == "ai" {
			ais = append(ais, mm)
		}
	}
	if len(ais) != len(reqs) {
		return nil, fmt.Errorf("%d AI messages for %d model requests", len(ais), len(reqs))
	}
	out := make([]time.Time, len(ais))
	for i, ai := range ais {
		content, _ := ai["content"].(string)
		sent := SendTimes(content)
		if len(sent) == 0 {
			return nil, fmt.Errorf("AI message %d has no send marker: %q", i, content)
		}
		out[i] = sent[len(sent)-1]
	}
	return out, nil
}
