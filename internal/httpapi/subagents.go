package httpapi

import (
	"context"

	"github.com/google/uuid"

	"agentserver/api"
	"agentserver/internal/storage"
)

// ListSubagents implements GET /threads/{thread_id}/runs/{run_id}/subagents:
// the execution records of the synchronous subagents a run started.
func (h *Handler) ListSubagents(ctx context.Context, req api.ListSubagentsRequestObject) (api.ListSubagentsResponseObject, error) {
	execs, err := h.runSubagents(ctx, req.ThreadId, req.RunId, func(tx *storage.Tx) ([]storage.SubagentExecution, error) {
		return tx.RunSubagents(req.RunId)
	})
	if err != nil {
		return nil, err
	}
	out := make(api.ListSubagents200JSONResponse, 0, len(execs))
	for _, e := range execs {
		out = append(out, toAPISubagent(e))
	}
	return out, nil
}

// GetSubagent implements GET /threads/{thread_id}/runs/{run_id}/subagents/{tool_call_id}.
func (h *Handler) GetSubagent(ctx context.Context, req api.GetSubagentRequestObject) (api.GetSubagentResponseObject, error) {
	execs, err := h.runSubagents(ctx, req.ThreadId, req.RunId, func(tx *storage.Tx) ([]storage.SubagentExecution, error) {
		e, err := tx.GetSubagent(req.RunId, req.ToolCallId)
		return []storage.SubagentExecution{e}, err
	})
	if err != nil {
		return nil, err
	}
	return api.GetSubagent200JSONResponse(toAPISubagent(execs[0])), nil
}

// runSubagents reads subagent records of a run after checking that the run
// is on the thread (404 otherwise).
func (h *Handler) runSubagents(ctx context.Context, threadID, runID uuid.UUID, read func(*storage.Tx) ([]storage.SubagentExecution, error)) ([]storage.SubagentExecution, error) {
	if _, err := h.runs.Get(ctx, &threadID, runID); err != nil {
		return nil, err
	}
	out, err := storage.Read(ctx, h.db, func(tx *storage.Tx) ([]storage.SubagentExecution, error) { return read(tx) })
	return out, err
}

func toAPISubagent(e storage.SubagentExecution) api.SubagentExecution {
	return api.SubagentExecution{
		ParentRunId: e.ParentRunID, ThreadId: e.ThreadID, ToolCallId: e.ToolCallID,
		SubagentType: e.Type, Description: e.Description, Status: api.SubagentExecutionStatus(e.Status),
		StopReason: nonEmpty(e.StopReason), Result: nonEmpty(e.Result), Error: nonEmpty(e.Error), Model: nonEmpty(e.Model),
		Usage: e.Usage, Steps: e.Steps, StartedAt: e.StartedAt, EndedAt: e.EndedAt,
	}
}

// nonEmpty returns a pointer to s, or nil for "" (an omitted field).
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
