package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"agentserver/api"
	"agentserver/internal/crons"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
)

// cronKeys are the body fields that describe the cron itself; the others
// are the fields of the run each firing makes (its payload).
var cronKeys = []string{"schedule", "timezone", "end_time", "enabled", "on_run_completed"}

// cronFields are the names select may pick on crons.
var cronFields = []string{"cron_id", "assistant_id", "thread_id", "end_time", "schedule", "created_at", "updated_at", "user_id", "payload", "next_run_date", "metadata", "timezone", "enabled", "on_run_completed"}

// CreateCron implements POST /runs/crons (stateless: each firing runs on
// a new thread).
func (h *Handler) CreateCron(ctx context.Context, req api.CreateCronRequestObject) (api.CreateCronResponseObject, error) {
	c, err := h.createCron(ctx, req.Body, nil)
	if err != nil {
		return nil, err
	}
	return api.CreateCron200JSONResponse(c), nil
}

// CreateThreadCron implements POST /threads/{thread_id}/runs/crons.
func (h *Handler) CreateThreadCron(ctx context.Context, req api.CreateThreadCronRequestObject) (api.CreateThreadCronResponseObject, error) {
	c, err := h.createCron(ctx, req.Body, &req.ThreadId)
	if err != nil {
		return nil, err
	}
	return api.CreateThreadCron200JSONResponse(c), nil
}

func (h *Handler) createCron(ctx context.Context, b *api.CronCreate, threadID *uuid.UUID) (api.Cron, error) {
	if b == nil {
		return api.Cron{}, invalidf("a body with schedule and assistant_id is required")
	}
	payload, err := payloadOf(b, cronKeys)
	if err != nil {
		return api.Cron{}, err
	}
	run, err := h.cronRunParams(ctx)(payload)
	if err != nil {
		return api.Cron{}, err
	}
	sp := crons.Spec{
		ThreadID: threadID, Schedule: b.Schedule, Timezone: deref(b.Timezone), EndTime: b.EndTime,
		Enabled: b.Enabled, Metadata: b.Metadata, Payload: payload, Run: run,
	}
	if b.OnRunCompleted != nil {
		sp.OnRunCompleted = string(*b.OnRunCompleted)
	}
	c, err := h.crons.Create(ctx, sp)
	if err != nil {
		return api.Cron{}, err
	}
	return toAPICron(c), nil
}

// cronRunParams returns the function that checks a cron's run payload as
// a run-creating body is checked.
func (h *Handler) cronRunParams(ctx context.Context) crons.Rebuild {
	return func(payload map[string]any) (runs.CreateParams, error) {
		raw, err := json.Marshal(payload)
		if err != nil {
			return runs.CreateParams{}, invalidf("payload: " + err.Error())
		}
		var body api.RunCreate
		if err := json.Unmarshal(raw, &body); err != nil {
			return runs.CreateParams{}, invalidf("payload: " + err.Error())
		}
		if firstString(body.AssistantId) == nil {
			return runs.CreateParams{}, invalidf("assistant_id is required")
		}
		return h.createParams(ctx, &body, nil)
	}
}

// payloadOf returns a request body as a JSON object without the keys
// named in drop.
func payloadOf(body any, drop []string) (map[string]any, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, invalidf("body: " + err.Error())
	}
	m := map[string]any{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, invalidf("body: " + err.Error())
	}
	for _, k := range drop {
		delete(m, k)
	}
	return m, nil
}

// GetCron implements GET /runs/crons/{cron_id}.
func (h *Handler) GetCron(ctx context.Context, req api.GetCronRequestObject) (api.GetCronResponseObject, error) {
	c, err := h.crons.Get(ctx, req.CronId)
	if err != nil {
		return nil, err
	}
	return api.GetCron200JSONResponse(toAPICron(c)), nil
}

// UpdateCron implements PATCH /runs/crons/{cron_id}: the given fields
// replace the cron's, metadata is merged.
func (h *Handler) UpdateCron(ctx context.Context, req api.UpdateCronRequestObject) (api.UpdateCronResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.CronPatch{}
	}
	p := crons.Patch{Schedule: b.Schedule, Timezone: b.Timezone, Enabled: b.Enabled, Metadata: b.Metadata}
	if b.OnRunCompleted != nil {
		v := string(*b.OnRunCompleted)
		p.OnRunCompleted = &v
	}
	var err error
	if p.EndTimeSet, p.EndTime, err = endTimeOf(b.EndTime); err != nil {
		return nil, err
	}
	if p.Payload, err = payloadOf(b, append([]string{"metadata"}, cronKeys...)); err != nil {
		return nil, err
	}
	c, err := h.crons.Update(ctx, req.CronId, p, h.cronRunParams(ctx))
	if err != nil {
		return nil, err
	}
	return api.UpdateCron200JSONResponse(toAPICron(c)), nil
}

// endTimeOf reads a PATCH end_time: absent leaves it, null clears it.
func endTimeOf(raw json.RawMessage) (set bool, at *time.Time, err error) {
	if len(raw) == 0 {
		return false, nil, nil
	}
	if string(raw) == "null" {
		return true, nil, nil
	}
	var t time.Time
	if err := json.Unmarshal(raw, &t); err != nil {
		return false, nil, invalidf("end_time must be an RFC 3339 date-time or null")
	}
	return true, &t, nil
}

// DeleteCron implements DELETE /runs/crons/{cron_id}.
func (h *Handler) DeleteCron(ctx context.Context, req api.DeleteCronRequestObject) (api.DeleteCronResponseObject, error) {
	if err := h.crons.Delete(ctx, req.CronId); err != nil {
		return nil, err
	}
	return api.DeleteCron204Response{}, nil
}

// SearchCrons implements POST /runs/crons/search.
func (h *Handler) SearchCrons(ctx context.Context, req api.SearchCronsRequestObject) (api.SearchCronsResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.CronSearchRequest{}
	}
	if err := checkSelect(b.Select, cronFields); err != nil {
		return nil, err
	}
	q, err := h.cronQuery(b.AssistantId, b.ThreadId, b.Enabled, b.Metadata)
	if err != nil {
		return nil, err
	}
	q.Limit, q.Offset = intOr(b.Limit, 10), intOr(b.Offset, 0)
	if b.SortBy != nil {
		q.SortBy = string(*b.SortBy)
	}
	q.Desc = b.SortOrder != nil && *b.SortOrder == api.SortOrderDesc
	list, total, err := h.crons.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]api.Cron, len(list))
	for i, c := range list {
		out[i] = toAPICron(c)
	}
	out = emptyPageIfZero(out, q.Limit)
	return selectedList[api.Cron]{items: out, fields: b.Select, page: pagination(q.Offset, q.Limit, len(out), total)}, nil
}

// VisitSearchCronsResponse writes the list.
func (s selectedList[T]) VisitSearchCronsResponse(w http.ResponseWriter) error { return s.write(w) }

// CountCrons implements POST /runs/crons/count.
func (h *Handler) CountCrons(ctx context.Context, req api.CountCronsRequestObject) (api.CountCronsResponseObject, error) {
	b := req.Body
	if b == nil {
		b = &api.CronCountRequest{}
	}
	q, err := h.cronQuery(b.AssistantId, b.ThreadId, b.Enabled, b.Metadata)
	if err != nil {
		return nil, err
	}
	_, total, err := h.crons.Search(ctx, q)
	if err != nil {
		return nil, err
	}
	return api.CountCrons200JSONResponse(total), nil
}

// cronQuery builds the filter shared by search and count; assistant is a
// UUID or a graph name.
func (h *Handler) cronQuery(assistant *string, thread *uuid.UUID, enabled *bool, meta map[string]any) (storage.CronQuery, error) {
	q := storage.CronQuery{ThreadID: thread, Enabled: enabled, Metadata: meta}
	if ref := firstString(assistant); ref != nil {
		id, err := h.assistants.Resolve(*ref)
		if err != nil {
			return q, err
		}
		q.AssistantID = &id
	}
	return q, nil
}

func toAPICron(c storage.Cron) api.Cron {
	out := api.Cron{
		CronId: c.CronID, AssistantId: c.AssistantID, ThreadId: c.ThreadID, Schedule: c.Schedule,
		EndTime: c.EndTime, Enabled: c.Enabled, Payload: c.Payload, Metadata: c.Metadata,
		NextRunDate: c.NextRunDate, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	if out.Payload == nil {
		out.Payload = map[string]any{}
	}
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	if c.Timezone != "" {
		tz := c.Timezone
		out.Timezone = &tz
	}
	if c.OnRunCompleted != "" {
		v := api.CronOnRunCompleted(c.OnRunCompleted)
		out.OnRunCompleted = &v
	}
	return out
}
