package httpapi

import (
	"context"

	"github.com/google/uuid"

	"agentserver/api"
	"agentserver/internal/jsonx"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
)

// CreateThread implements POST /threads.
func (h *Handler) CreateThread(ctx context.Context, req api.CreateThreadRequestObject) (api.CreateThreadResponseObject, error) {
	var p threads.CreateParams
	if b := req.Body; b != nil {
		p.ThreadID = b.ThreadId
		p.Metadata = b.Metadata
		if b.IfExists != nil {
			p.IfExists = string(*b.IfExists)
		}
		ttl, err := threads.ParseTTL(b.Ttl)
		if err != nil {
			return nil, err
		}
		p.TTL = ttl
		for _, step := range b.Supersteps {
			var s threads.Superstep
			for _, u := range step.Updates {
				su := threads.SuperstepUpdate{Values: u.Values, AsNode: u.AsNode}
				if u.Command != nil {
					su.Command = commandMap(u.Command)
				}
				s.Updates = append(s.Updates, su)
			}
			p.Supersteps = append(p.Supersteps, s)
		}
	}
	th, err := h.threads.Create(ctx, p)
	if err != nil {
		return nil, err
	}
	return api.CreateThread200JSONResponse(toAPIThread(th)), nil
}

func commandMap(c *api.Command) map[string]any {
	m := map[string]any{}
	for k, v := range c.AdditionalProperties {
		m[k] = v
	}
	if c.Update != nil {
		m["update"] = c.Update
	}
	if c.Resume != nil {
		m["resume"] = c.Resume
	}
	if c.Goto != nil {
		m["goto"] = c.Goto
	}
	return m
}

// GetThread implements GET /threads/{thread_id}.
func (h *Handler) GetThread(ctx context.Context, req api.GetThreadRequestObject) (api.GetThreadResponseObject, error) {
	th, err := h.threads.Get(ctx, req.ThreadId)
	if err != nil {
		return nil, err
	}
	return api.GetThread200JSONResponse(toAPIThread(th)), nil
}

// PatchThread implements PATCH /threads/{thread_id}: metadata is merged; the
// Agent Protocol's values and messages become a new checkpoint.
func (h *Handler) PatchThread(ctx context.Context, req api.PatchThreadRequestObject) (api.PatchThreadResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.ThreadPatch{}
	}
	ttl, err := threads.ParseTTL(b.Ttl)
	if err != nil {
		return nil, err
	}
	if b.Values != nil || len(b.Messages) > 0 {
		update := map[string]any{}
		if m, ok := b.Values.(map[string]any); ok {
			update = jsonx.Merge(update, m)
		} else if b.Values != nil {
			return nil, invalidf("values must be an object")
		}
		if len(b.Messages) > 0 {
			msgs := make([]any, len(b.Messages))
			for i, m := range b.Messages {
				msgs[i] = map[string]any(m)
			}
			update["messages"] = msgs
		}
		var from *uuid.UUID
		if b.Checkpoint != nil && b.Checkpoint.CheckpointId != nil {
			var err error
			if from, err = checkpointIDFrom(*b.Checkpoint.CheckpointId); err != nil {
				return nil, err
			}
		}
		if _, err := h.threads.UpdateState(ctx, req.ThreadId, threads.StateUpdate{Values: update, CheckpointID: from}); err != nil {
			return nil, err
		}
	}
	th, err := h.threads.Patch(ctx, req.ThreadId, b.Metadata, ttl)
	if err != nil {
		return nil, err
	}
	return api.PatchThread200JSONResponse(toAPIThread(th)), nil
}

// DeleteThread implements DELETE /threads/{thread_id}.
func (h *Handler) DeleteThread(ctx context.Context, req api.DeleteThreadRequestObject) (api.DeleteThreadResponseObject, error) {
	if err := h.deleteThread(ctx, req.ThreadId); err != nil {
		return nil, err
	}
	return api.DeleteThread204Response{}, nil
}

// deleteThread deletes a thread with its runs and checkpoints and stops the
// runs it had; none of them writes into the deleted thread afterwards.
func (h *Handler) deleteThread(ctx context.Context, id uuid.UUID) error {
	if h.onDelete != nil {
		if th, err := h.threads.Get(ctx, id); err == nil {
			graph, _ := th.Metadata["graph_id"].(string)
			h.onDelete(ctx, graph, th.Values)
		}
	}
	return h.runs.DeleteThread(ctx, id)
}

// CopyThread implements POST /threads/{thread_id}/copy.
func (h *Handler) CopyThread(ctx context.Context, req api.CopyThreadRequestObject) (api.CopyThreadResponseObject, error) {
	th, err := h.threads.Copy(ctx, req.ThreadId)
	if err != nil {
		return nil, err
	}
	return api.CopyThread200JSONResponse(toAPIThread(th)), nil
}

// SearchThreads implements POST /threads/search.
func (h *Handler) SearchThreads(ctx context.Context, req api.SearchThreadsRequestObject) (api.SearchThreadsResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.ThreadSearchRequest{}
	}
	q := storage.ThreadQuery{
		IDs: b.Ids, Metadata: b.Metadata, Values: b.Values,
		Limit: intOr(b.Limit, 10), Offset: intOr(b.Offset, 0), Desc: true,
	}
	if b.Status != nil {
		q.Status = string(*b.Status)
	}
	if b.SortBy != nil {
		q.SortBy = string(*b.SortBy)
	}
	if b.SortOrder != nil {
		q.Desc = *b.SortOrder == api.SortOrderDesc
	}
	if err := checkSelect(b.Select, threadFields); err != nil {
		return nil, err
	}
	page, total, err := h.threads.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]api.Thread, len(page))
	for i, th := range page {
		out[i] = toAPIThread(th)
	}
	return selectedList[api.Thread]{items: out, fields: b.Select, page: pagination(q.Offset, q.Limit, len(out), total)}, nil
}

// threadFields are the names select may pick on threads.
var threadFields = []string{"thread_id", "created_at", "updated_at", "state_updated_at", "metadata", "status", "values", "interrupts", "config", "error", "ttl"}

// CountThreads implements POST /threads/count.
func (h *Handler) CountThreads(ctx context.Context, req api.CountThreadsRequestObject) (api.CountThreadsResponseObject, error) {
	var q storage.ThreadQuery
	if b := req.Body; b != nil {
		q.Metadata, q.Values = b.Metadata, b.Values
		if b.Status != nil {
			q.Status = string(*b.Status)
		}
	}
	n, err := h.threads.Count(ctx, q)
	if err != nil {
		return nil, err
	}
	return api.CountThreads200JSONResponse(n), nil
}

// GetThreadState implements GET /threads/{thread_id}/state.
func (h *Handler) GetThreadState(ctx context.Context, req api.GetThreadStateRequestObject) (api.GetThreadStateResponseObject, error) {
	st, err := h.state(ctx, req.ThreadId, nil, req.Params.Subgraphs)
	if err != nil {
		return nil, err
	}
	return api.GetThreadState200JSONResponse(toAPIState(st)), nil
}

// GetThreadStateAtCheckpoint implements GET /threads/{thread_id}/state/{checkpoint_id}.
func (h *Handler) GetThreadStateAtCheckpoint(ctx context.Context, req api.GetThreadStateAtCheckpointRequestObject) (api.GetThreadStateAtCheckpointResponseObject, error) {
	id, err := checkpointIDFrom(req.CheckpointId)
	if err != nil {
		return nil, err
	}
	st, err := h.state(ctx, req.ThreadId, id, req.Params.Subgraphs)
	if err != nil {
		return nil, err
	}
	return api.GetThreadStateAtCheckpoint200JSONResponse(toAPIState(st)), nil
}

// state reads a thread's state at a checkpoint (nil: the newest), with its
// subgraphs' states when the subgraphs parameter says so.
func (h *Handler) state(ctx context.Context, threadID uuid.UUID, checkpointID *uuid.UUID, subgraphsParam *string) (threads.State, error) {
	subgraphs, err := parseBool(subgraphsParam, false)
	if err != nil {
		return threads.State{}, err
	}
	if subgraphs {
		return h.threads.GetStateWithSubgraphs(ctx, threadID, checkpointID)
	}
	return h.threads.GetState(ctx, threadID, checkpointID)
}

// GetThreadStateByCheckpointConfig implements POST /threads/{thread_id}/state/checkpoint.
func (h *Handler) GetThreadStateByCheckpointConfig(ctx context.Context, req api.GetThreadStateByCheckpointConfigRequestObject) (api.GetThreadStateByCheckpointConfigResponseObject, error) {
	var id *uuid.UUID
	subgraphs := false
	if req.Body != nil {
		if req.Body.Checkpoint.CheckpointId != nil {
			var err error
			if id, err = checkpointIDFrom(*req.Body.Checkpoint.CheckpointId); err != nil {
				return nil, err
			}
		}
		subgraphs = req.Body.Subgraphs != nil && *req.Body.Subgraphs
	}
	get := h.threads.GetState
	if subgraphs {
		get = h.threads.GetStateWithSubgraphs
	}
	st, err := get(ctx, req.ThreadId, id)
	if err != nil {
		return nil, err
	}
	return api.GetThreadStateByCheckpointConfig200JSONResponse(toAPIState(st)), nil
}

// UpdateThreadState implements POST /threads/{thread_id}/state.
func (h *Handler) UpdateThreadState(ctx context.Context, req api.UpdateThreadStateRequestObject) (api.UpdateThreadStateResponseObject, error) {
	var u threads.StateUpdate
	if b := req.Body; b != nil {
		u.Values = b.Values
		if b.AsNode != nil {
			u.AsNode = *b.AsNode
		}
		var err error
		switch {
		case b.CheckpointId != nil:
			u.CheckpointID, err = checkpointIDFrom(*b.CheckpointId)
		case b.Checkpoint != nil && b.Checkpoint.CheckpointId != nil:
			u.CheckpointID, err = checkpointIDFrom(*b.Checkpoint.CheckpointId)
		}
		if err != nil {
			return nil, err
		}
	}
	ref, err := h.threads.UpdateState(ctx, req.ThreadId, u)
	if err != nil {
		return nil, err
	}
	return api.UpdateThreadState200JSONResponse{Checkpoint: toAPICheckpoint(ref)}, nil
}

// GetThreadHistory implements GET /threads/{thread_id}/history.
func (h *Handler) GetThreadHistory(ctx context.Context, req api.GetThreadHistoryRequestObject) (api.GetThreadHistoryResponseObject, error) {
	limit := intOr(req.Params.Limit, 10)
	q := threads.HistoryQuery{Limit: max(limit, 1)}
	if req.Params.Before != nil {
		var err error
		if q.Before, err = checkpointIDFrom(*req.Params.Before); err != nil {
			return nil, err
		}
	}
	states, err := h.threads.History(ctx, req.ThreadId, q)
	if err != nil {
		return nil, err
	}
	return api.GetThreadHistory200JSONResponse(toAPIStates(emptyPageIfZero(states, limit))), nil
}

// SearchThreadHistory implements POST /threads/{thread_id}/history.
func (h *Handler) SearchThreadHistory(ctx context.Context, req api.SearchThreadHistoryRequestObject) (api.SearchThreadHistoryResponseObject, error) {
	q := threads.HistoryQuery{Limit: 10}
	if b := req.Body; b != nil {
		q.Limit = intOr(b.Limit, 10)
		q.Metadata = b.Metadata
		var err error
		if q.Before, err = checkpointIDFrom(b.Before); err != nil {
			return nil, err
		}
	}
	states, err := h.threads.History(ctx, req.ThreadId, q)
	if err != nil {
		return nil, err
	}
	return api.SearchThreadHistory200JSONResponse(toAPIStates(states)), nil
}

func toAPIThread(th threads.Thread) api.Thread {
	out := api.Thread{
		ThreadId: th.ThreadID, CreatedAt: th.CreatedAt, UpdatedAt: th.UpdatedAt,
		Metadata: th.Metadata, Status: api.ThreadStatus(th.Status),
		Values: th.Values, Interrupts: orEmpty(th.Interrupts), Error: th.Error,
	}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	if !th.StateUpdatedAt.IsZero() {
		t := th.StateUpdatedAt
		out.StateUpdatedAt = &t
	}
	if th.Config != nil {
		out.Config = &api.Config{AdditionalProperties: th.Config}
	}
	if th.TTL != nil {
		out.Ttl = th.TTL
	}
	return out
}

func toAPICheckpoint(ref threads.CheckpointRef) api.Checkpoint {
	return api.Checkpoint{ThreadId: ref.ThreadID.String(), CheckpointNs: ref.CheckpointNS, CheckpointId: ref.CheckpointID.String(), CheckpointMap: map[string]any{}}
}

func toAPIState(st threads.State) api.ThreadState {
	out := api.ThreadState{Values: st.Values, Next: st.Next, Metadata: st.Metadata, Tasks: []api.ThreadTask{}, Interrupts: toAPIInterrupts(st.Interrupts)}
	if st.CreatedAt != nil {
		s := st.CreatedAt.Format(timeLayout)
		out.CreatedAt = &s
	}
	if st.Checkpoint != nil {
		cp := toAPICheckpoint(*st.Checkpoint)
		out.Checkpoint = &cp
	}
	if st.ParentCheckpoint != nil {
		cp := toAPICheckpoint(*st.ParentCheckpoint)
		out.ParentCheckpoint = &cp
	}
	for _, t := range st.Tasks {
		task := toAPITask(t)
		if sub, ok := st.Subgraphs[t.ID]; ok {
			state := toAPIState(sub)
			task.State = &state
		}
		out.Tasks = append(out.Tasks, task)
	}
	return out
}

// pullTaskPath is the first element of the path LangGraph gives a task
// started by a node's triggers; every task of a served graph is one.
const pullTaskPath = "__pregel_pull"

// toAPITask converts a pending task. Every field clients read without checks
// (path, error, interrupts, checkpoint, state, result) is always present.
func toAPITask(t storage.CheckpointTask) api.ThreadTask {
	return api.ThreadTask{
		Id: t.ID, Name: t.Name, Path: []any{pullTaskPath, t.Name}, Error: t.Error,
		Interrupts: toAPIInterrupts(t.Interrupts), Result: t.Result,
	}
}

func toAPIStates(states []threads.State) []api.ThreadState {
	out := make([]api.ThreadState, len(states))
	for i, st := range states {
		out[i] = toAPIState(st)
	}
	return out
}

func toAPIInterrupts(in []any) []api.Interrupt {
	out := make([]api.Interrupt, 0, len(in))
	for _, v := range in {
		m, _ := v.(map[string]any)
		it := api.Interrupt{Value: m["value"], AdditionalProperties: map[string]any{}}
		if id, ok := m["id"].(string); ok {
			it.Id = &id
		}
		for k, e := range m {
			if k != "value" && k != "id" {
				it.AdditionalProperties[k] = e
			}
		}
		out = append(out, it)
	}
	return out
}

// timeLayout is the timestamp format of state created_at strings, matching
// the Python server's ISO-8601 with offset.
const timeLayout = "2006-01-02T15:04:05.000000-07:00"

// PruneThreads implements POST /threads/prune: threads with a pending or
// running run are skipped, as the TTL sweeper skips them.
func (h *Handler) PruneThreads(ctx context.Context, req api.PruneThreadsRequestObject) (api.PruneThreadsResponseObject, error) {
	if req.Body == nil {
		return nil, invalidf("request body is required")
	}
	strategy := storage.TTLDelete
	if req.Body.Strategy != nil {
		strategy = string(*req.Body.Strategy)
	}
	n, err := h.threads.Prune(ctx, req.Body.ThreadIds, strategy)
	if err != nil {
		return nil, err
	}
	return api.PruneThreads200JSONResponse{PrunedCount: n}, nil
}

// PatchThreadState implements PATCH /threads/{thread_id}/state: metadata is
// merged into the newest checkpoint's metadata.
func (h *Handler) PatchThreadState(ctx context.Context, req api.PatchThreadStateRequestObject) (api.PatchThreadStateResponseObject, error) {
	if req.Body == nil {
		return nil, invalidf("request body is required")
	}
	if err := h.threads.PatchStateMetadata(ctx, req.ThreadId, req.Body.Metadata); err != nil {
		return nil, err
	}
	return api.PatchThreadState204Response{}, nil
}
