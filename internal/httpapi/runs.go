package httpapi

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"agentserver/api"
	"agentserver/internal/errdefs"
)

// This file answers the run routes while the run engine is not part of the
// server: every lookup of a run is a real 404 (no run exists), listings are
// empty, and creating a run is refused with a 422 that says why. The routes,
// their validation and their thread/assistant checks are already final.

var errNoRunEngine = fmt.Errorf("%w: this server build does not execute runs yet", errdefs.ErrInvalid)

func runNotFound(id uuid.UUID) error {
	return fmt.Errorf("run %s: %w", id, errdefs.ErrNotFound)
}

// threadRunNotFound checks the thread first so that a missing thread and a
// missing run give distinct messages.
func (h *Handler) threadRunNotFound(ctx context.Context, threadID, runID uuid.UUID) error {
	if _, err := h.threads.Get(ctx, threadID); err != nil {
		return err
	}
	return runNotFound(runID)
}

// refuseRun validates the target of a run creation, then refuses it.
func (h *Handler) refuseRun(ctx context.Context, threadID *uuid.UUID, assistantID *string, ifNotExists *api.IfNotExists) error {
	if assistantID != nil {
		if _, err := h.assistants.Resolve(*assistantID); err != nil {
			return err
		}
	}
	if threadID != nil && (ifNotExists == nil || *ifNotExists != api.IfNotExistsCreate) {
		if _, err := h.threads.Get(ctx, *threadID); err != nil {
			return err
		}
	}
	return errNoRunEngine
}

// ListThreadRuns implements GET /threads/{thread_id}/runs.
func (h *Handler) ListThreadRuns(ctx context.Context, req api.ListThreadRunsRequestObject) (api.ListThreadRunsResponseObject, error) {
	if _, err := h.threads.Get(ctx, req.ThreadId); err != nil {
		return nil, err
	}
	return selectedList[api.Run]{items: []api.Run{}, page: page{next: -1}}, nil
}

// CreateThreadRun implements POST /threads/{thread_id}/runs.
func (h *Handler) CreateThreadRun(ctx context.Context, req api.CreateThreadRunRequestObject) (api.CreateThreadRunResponseObject, error) {
	b := bodyOr(req.Body)
	return nil, h.refuseRun(ctx, &req.ThreadId, b.AssistantId, b.IfNotExists)
}

// StreamThreadRun implements POST /threads/{thread_id}/runs/stream.
func (h *Handler) StreamThreadRun(ctx context.Context, req api.StreamThreadRunRequestObject) (api.StreamThreadRunResponseObject, error) {
	b := bodyOr(req.Body)
	return nil, h.refuseRun(ctx, &req.ThreadId, b.AssistantId, b.IfNotExists)
}

// WaitThreadRun implements POST /threads/{thread_id}/runs/wait.
func (h *Handler) WaitThreadRun(ctx context.Context, req api.WaitThreadRunRequestObject) (api.WaitThreadRunResponseObject, error) {
	b := bodyOr(req.Body)
	return nil, h.refuseRun(ctx, &req.ThreadId, b.AssistantId, b.IfNotExists)
}

// GetThreadRun implements GET /threads/{thread_id}/runs/{run_id}.
func (h *Handler) GetThreadRun(ctx context.Context, req api.GetThreadRunRequestObject) (api.GetThreadRunResponseObject, error) {
	return nil, h.threadRunNotFound(ctx, req.ThreadId, req.RunId)
}

// DeleteThreadRun implements DELETE /threads/{thread_id}/runs/{run_id}.
func (h *Handler) DeleteThreadRun(ctx context.Context, req api.DeleteThreadRunRequestObject) (api.DeleteThreadRunResponseObject, error) {
	return nil, h.threadRunNotFound(ctx, req.ThreadId, req.RunId)
}

// JoinThreadRun implements GET /threads/{thread_id}/runs/{run_id}/join.
func (h *Handler) JoinThreadRun(ctx context.Context, req api.JoinThreadRunRequestObject) (api.JoinThreadRunResponseObject, error) {
	return nil, h.threadRunNotFound(ctx, req.ThreadId, req.RunId)
}

// JoinThreadRunStream implements GET /threads/{thread_id}/runs/{run_id}/stream.
func (h *Handler) JoinThreadRunStream(ctx context.Context, req api.JoinThreadRunStreamRequestObject) (api.JoinThreadRunStreamResponseObject, error) {
	return nil, h.threadRunNotFound(ctx, req.ThreadId, req.RunId)
}

// CancelThreadRun implements POST /threads/{thread_id}/runs/{run_id}/cancel.
func (h *Handler) CancelThreadRun(ctx context.Context, req api.CancelThreadRunRequestObject) (api.CancelThreadRunResponseObject, error) {
	return nil, h.threadRunNotFound(ctx, req.ThreadId, req.RunId)
}

// CancelSubagent implements POST /threads/{thread_id}/runs/{run_id}/subagents/{tool_call_id}/cancel.
func (h *Handler) CancelSubagent(ctx context.Context, req api.CancelSubagentRequestObject) (api.CancelSubagentResponseObject, error) {
	return nil, h.threadRunNotFound(ctx, req.ThreadId, req.RunId)
}

// JoinThreadStream implements GET /threads/{thread_id}/stream.
func (h *Handler) JoinThreadStream(ctx context.Context, req api.JoinThreadStreamRequestObject) (api.JoinThreadStreamResponseObject, error) {
	if _, err := h.threads.Get(ctx, req.ThreadId); err != nil {
		return nil, err
	}
	return nil, errNoRunEngine
}

// CreateRun implements POST /runs.
func (h *Handler) CreateRun(ctx context.Context, req api.CreateRunRequestObject) (api.CreateRunResponseObject, error) {
	b := runBodyOr(req.Body)
	return nil, h.refuseRun(ctx, b.ThreadId, firstString(b.AssistantId, b.AgentId), b.IfNotExists)
}

// StreamRun implements POST /runs/stream.
func (h *Handler) StreamRun(ctx context.Context, req api.StreamRunRequestObject) (api.StreamRunResponseObject, error) {
	b := runBodyOr(req.Body)
	return nil, h.refuseRun(ctx, b.ThreadId, firstString(b.AssistantId, b.AgentId), b.IfNotExists)
}

// WaitRun implements POST /runs/wait.
func (h *Handler) WaitRun(ctx context.Context, req api.WaitRunRequestObject) (api.WaitRunResponseObject, error) {
	b := runBodyOr(req.Body)
	return nil, h.refuseRun(ctx, b.ThreadId, firstString(b.AssistantId, b.AgentId), b.IfNotExists)
}

// CreateRunBatch implements POST /runs/batch.
func (h *Handler) CreateRunBatch(ctx context.Context, req api.CreateRunBatchRequestObject) (api.CreateRunBatchResponseObject, error) {
	if req.Body != nil {
		for _, b := range *req.Body {
			if err := h.refuseRun(ctx, b.ThreadId, firstString(b.AssistantId, b.AgentId), b.IfNotExists); err != errNoRunEngine {
				return nil, err
			}
		}
	}
	return nil, errNoRunEngine
}

// CancelRuns implements POST /runs/cancel. Named runs that do not exist are
// a 404; a status-wide cancel has nothing to stop.
func (h *Handler) CancelRuns(ctx context.Context, req api.CancelRunsRequestObject) (api.CancelRunsResponseObject, error) {
	if b := req.Body; b != nil && len(b.RunIds) > 0 {
		return nil, runNotFound(b.RunIds[0])
	}
	return api.CancelRuns204Response{}, nil
}

// SearchRuns implements POST /runs/search.
func (h *Handler) SearchRuns(ctx context.Context, req api.SearchRunsRequestObject) (api.SearchRunsResponseObject, error) {
	return api.SearchRuns200JSONResponse{Body: []api.Run{}}, nil
}

// GetRun implements GET /runs/{run_id}.
func (h *Handler) GetRun(ctx context.Context, req api.GetRunRequestObject) (api.GetRunResponseObject, error) {
	return nil, runNotFound(req.RunId)
}

// DeleteRun implements DELETE /runs/{run_id}.
func (h *Handler) DeleteRun(ctx context.Context, req api.DeleteRunRequestObject) (api.DeleteRunResponseObject, error) {
	return nil, runNotFound(req.RunId)
}

// WaitRunById implements GET /runs/{run_id}/wait.
func (h *Handler) WaitRunById(ctx context.Context, req api.WaitRunByIdRequestObject) (api.WaitRunByIdResponseObject, error) {
	return nil, runNotFound(req.RunId)
}

// JoinRunStream implements GET /runs/{run_id}/stream.
func (h *Handler) JoinRunStream(ctx context.Context, req api.JoinRunStreamRequestObject) (api.JoinRunStreamResponseObject, error) {
	return nil, runNotFound(req.RunId)
}

// CancelRun implements POST /runs/{run_id}/cancel.
func (h *Handler) CancelRun(ctx context.Context, req api.CancelRunRequestObject) (api.CancelRunResponseObject, error) {
	return nil, runNotFound(req.RunId)
}

func bodyOr(b *api.RunCreateStateful) api.RunCreateStateful {
	if b == nil {
		return api.RunCreateStateful{}
	}
	return *b
}

func runBodyOr(b *api.RunCreate) api.RunCreate {
	if b == nil {
		return api.RunCreate{}
	}
	return *b
}

func firstString(ss ...*string) *string {
	for _, s := range ss {
		if s != nil && *s != "" {
			return s
		}
	}
	return nil
}
