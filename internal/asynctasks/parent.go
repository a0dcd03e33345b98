package asynctasks

import "context"

// Metadata keys a transport writes on the thread of a subagent it starts,
// naming the thread and run that started it (the supervisor's), so that a
// client can link the two both ways: the supervisor's async_tasks channel
// names the subagent threads, and these name the supervisor. Local and HTTP
// record them; A2A does not (the agent owns its contexts).
const (
	MetaParentThreadID = "parent_thread_id"
	MetaParentRunID    = "parent_run_id"
	MetaAgentName      = "async_task_agent"
)

// Parent names the run that starts a subagent and the agent name it asks
// for.
type Parent struct {
	ThreadID, RunID, AgentName string
}

type parentKey struct{}

// WithParent returns ctx carrying p, for Transport.Start to record on the
// subagent's thread.
func WithParent(ctx context.Context, p Parent) context.Context {
	return context.WithValue(ctx, parentKey{}, p)
}

// parentMetadata is the thread metadata that records ctx's Parent (nil
// without one); empty fields are left out.
func parentMetadata(ctx context.Context) map[string]any {
	p, ok := ctx.Value(parentKey{}).(Parent)
	if !ok {
		return nil
	}
	md := map[string]any{}
	for k, v := range map[string]string{MetaParentThreadID: p.ThreadID, MetaParentRunID: p.RunID, MetaAgentName: p.AgentName} {
		if v != "" {
			md[k] = v
		}
	}
	if len(md) == 0 {
		return nil
	}
	return md
}
