package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"agentserver/api"
	"agentserver/internal/runs"
	"agentserver/internal/sse"
	"agentserver/internal/storage"
)

// heartbeatEvery is the cadence of ": heartbeat" comments on idle streams.
const heartbeatEvery = 5 * time.Second

// keepAliveEvery is how often /wait and /join write a newline while waiting.
const keepAliveEvery = time.Second

// eventSource is a subscription to a run's or a thread's events.
type eventSource interface {
	sse.Source
	Close()
}

// streamResponse streams a run's events as SSE. It satisfies the strict
// response interface of every streaming route.
type streamResponse struct {
	ctx     context.Context
	runs    *runs.Service
	sub     eventSource
	headers map[string]string
	withIDs bool
	filter  map[string]bool
	// onDisconnect runs when the client leaves before the stream ended.
	onDisconnect func()
	// preface is written before the subscription's events (the metadata
	// event of a join that starts mid-run).
	preface []byte
}

func (s *streamResponse) write(w http.ResponseWriter) error {
	for k, v := range s.headers {
		w.Header().Set(k, v)
	}
	sw := sse.NewWriter(w)
	if s.preface != nil {
		if err := sw.Queue("", "metadata", s.preface); err != nil {
			return err
		}
	}
	if s.sub == nil {
		return sw.Flush() // nothing retained to replay: an empty stream
	}
	defer s.sub.Close()
	var filter func(string) bool
	if len(s.filter) > 0 {
		filter = func(name string) bool {
			base := name
			for i := 0; i < len(name); i++ {
				if name[i] == '|' || name[i] == '/' {
					base = name[:i]
					break
				}
			}
			switch {
			case name == "metadata" || name == "error" || name == "end":
				return true
			case name == "messages":
				return s.filter["messages-tuple"]
			case base == "messages":
				return s.filter["messages"] // messages/partial, /complete, /metadata
			}
			return s.filter[base]
		}
	}
	err := sse.Pump(s.ctx, sw, s.sub, sse.PumpOptions{Heartbeat: heartbeatEvery, Filter: filter, WithIDs: s.withIDs})
	if err != nil && s.ctx.Err() != nil && s.onDisconnect != nil {
		s.onDisconnect()
		return nil
	}
	return err
}

func (s *streamResponse) VisitStreamThreadRunResponse(w http.ResponseWriter) error { return s.write(w) }
func (s *streamResponse) VisitStreamRunResponse(w http.ResponseWriter) error       { return s.write(w) }
func (s *streamResponse) VisitJoinThreadRunStreamResponse(w http.ResponseWriter) error {
	return s.write(w)
}
func (s *streamResponse) VisitJoinRunStreamResponse(w http.ResponseWriter) error { return s.write(w) }
func (s *streamResponse) VisitJoinThreadStreamResponse(w http.ResponseWriter) error {
	return s.write(w)
}

// startStream creates a run and streams it from its first event.
func (h *Handler) startStream(ctx context.Context, b *api.RunCreate, threadID *uuid.UUID) (*streamResponse, error) {
	p, r, err := h.createRunStreamed(ctx, b, threadID, true)
	if err != nil {
		return nil, err
	}
	sub, err := h.runs.Subscribe(ctx, r, "-1")
	if err != nil {
		return nil, err
	}
	headers := map[string]string{"Content-Location": runLocation(r)}
	if p.StreamResumable {
		headers["Location"] = streamLocation(r)
	}
	resp := &streamResponse{ctx: ctx, runs: h.runs, headers: headers, withIDs: p.StreamResumable}
	if sub != nil {
		resp.sub = sub
	}
	if onDisconnectCancel(b) {
		resp.onDisconnect = h.cancelInBackground(r)
	}
	return resp, nil
}

// cancelInBackground returns a function that interrupts a run after its
// client went away; the request context is gone by then.
func (h *Handler) cancelInBackground(r storage.Run) func() {
	tid, runID := r.ThreadID, r.RunID // not the whole record: it outlives the request
	return func() {
		if h.runs.Stopped() {
			return // shutting down: the run is kept for the next start
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.runs.Cancel(ctx, &tid, runID, runs.ActionInterrupt, false)
	}
}

// StreamThreadRun implements POST /threads/{thread_id}/runs/stream.
func (h *Handler) StreamThreadRun(ctx context.Context, req api.StreamThreadRunRequestObject) (api.StreamThreadRunResponseObject, error) {
	tid := req.ThreadId
	return h.startStream(ctx, req.Body, &tid)
}

// StreamRun implements POST /runs/stream.
func (h *Handler) StreamRun(ctx context.Context, req api.StreamRunRequestObject) (api.StreamRunResponseObject, error) {
	return h.startStream(ctx, req.Body, bodyThread(req.Body))
}

// joinStream streams an existing run from Last-Event-ID (or from now).
func (h *Handler) joinStream(ctx context.Context, threadID *uuid.UUID, runID uuid.UUID, lastEventID *string, modes []string, cancelParam *string) (*streamResponse, error) {
	cancelOnDisconnect, err := parseBool(cancelParam, false)
	if err != nil {
		return nil, err
	}
	modes = parseList(modes)
	if err := runs.CheckStreamModes(modes); err != nil {
		return nil, err
	}
	r, err := h.runs.Get(ctx, threadID, runID)
	if err != nil {
		return nil, err
	}
	sub, err := h.runs.Subscribe(ctx, r, deref(lastEventID))
	if err != nil {
		return nil, err
	}
	resp := &streamResponse{ctx: ctx, runs: h.runs, withIDs: r.Kwargs.Resumable, filter: map[string]bool{}}
	if sub != nil {
		resp.sub = sub // nothing retained otherwise: an empty stream
		if deref(lastEventID) == "" && storage.RunActive(r.Status) {
			// Joining a live run mid-way: start, as every stream does, with
			// the run's metadata.
			resp.preface, _ = json.Marshal(map[string]any{"run_id": r.RunID.String(), "attempt": max(r.Attempt, 1), "thread_id": r.ThreadID.String()})
		}
	}
	for _, m := range modes {
		resp.filter[m] = true
	}
	if cancelOnDisconnect {
		resp.onDisconnect = h.cancelInBackground(r)
	}
	return resp, nil
}

// JoinThreadRunStream implements GET /threads/{thread_id}/runs/{run_id}/stream.
func (h *Handler) JoinThreadRunStream(ctx context.Context, req api.JoinThreadRunStreamRequestObject) (api.JoinThreadRunStreamResponseObject, error) {
	tid := req.ThreadId
	return h.joinStream(ctx, &tid, req.RunId, req.Params.LastEventID, req.Params.StreamMode, req.Params.CancelOnDisconnect)
}

// JoinRunStream implements GET /runs/{run_id}/stream.
func (h *Handler) JoinRunStream(ctx context.Context, req api.JoinRunStreamRequestObject) (api.JoinRunStreamResponseObject, error) {
	return h.joinStream(ctx, nil, req.RunId, req.Params.LastEventID, req.Params.StreamMode, req.Params.CancelOnDisconnect)
}

// waitResponse waits for a run and writes its final values (LangGraph) or
// {run, values, messages} (Agent Protocol). While waiting it writes a newline
// every second so proxies and clients keep the connection.
type waitResponse struct {
	ctx  context.Context
	runs *runs.Service
	// The run waited for: its ids, and whether it is stateless.
	runID, threadID uuid.UUID
	stateless       bool
	// contentLocation and location, when set, are the answer's headers of
	// those names.
	contentLocation, location string
	apShape                   bool
	onDisconnect              func()
}

// newWaitResponse waits for r.
func newWaitResponse(ctx context.Context, service *runs.Service, r storage.Run, apShape bool) *waitResponse {
	return &waitResponse{ctx: ctx, runs: service, runID: r.RunID, threadID: r.ThreadID, stateless: r.Stateless, apShape: apShape}
}

func (wr *waitResponse) write(w http.ResponseWriter) error {
	if wr.contentLocation != "" {
		w.Header().Set("Content-Location", wr.contentLocation)
	}
	if wr.location != "" {
		w.Header().Set("Location", wr.location)
	}
	w.Header().Set("Content-Type", "application/json")
	rc := http.NewResponseController(w)
	started := false
	tick := time.NewTicker(keepAliveEvery)
	defer tick.Stop()
	done := wr.runs.Done(wr.runID)
	for done != nil {
		select {
		case <-done:
			// On a shared database the run may have moved to another
			// replica: keep waiting (and keeping the connection) until
			// it has ended.
			done = wr.runs.Done(wr.runID)
		case <-tick.C:
			if !started {
				w.WriteHeader(http.StatusOK)
				started = true
			}
			_ = rc.SetWriteDeadline(time.Now().Add(sse.DefaultWriteTimeout))
			if _, err := w.Write([]byte("\n")); err != nil {
				return err
			}
			rc.Flush()
		case <-wr.ctx.Done():
			if wr.onDisconnect != nil {
				wr.onDisconnect()
			}
			return nil
		}
	}
	var threadID *uuid.UUID
	if !wr.stateless {
		threadID = &wr.threadID
	}
	run, values, err := wr.runs.Wait(wr.ctx, threadID, wr.runID)
	if err != nil {
		return err
	}
	body := waitBody(run, values, wr.apShape)
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	if !started {
		w.WriteHeader(http.StatusOK)
	}
	_, err = w.Write(raw)
	return err
}

// waitBody is the final JSON of /wait and /join.
func waitBody(run storage.Run, values map[string]any, apShape bool) any {
	if apShape {
		r := toAPIRun(run, true)
		out := map[string]any{"run": r, "values": orEmpty(values)}
		if msgs, ok := values["messages"]; ok {
			out["messages"] = msgs
		}
		return out
	}
	if run.Status == storage.RunError || run.Status == storage.RunTimeout {
		name := run.ErrorName
		if name == "" {
			name = "Error"
		}
		return map[string]any{"__error__": map[string]any{"error": name, "message": run.Error}}
	}
	if values == nil {
		return map[string]any{}
	}
	return values
}

func (wr *waitResponse) VisitWaitThreadRunResponse(w http.ResponseWriter) error { return wr.write(w) }
func (wr *waitResponse) VisitWaitRunResponse(w http.ResponseWriter) error       { return wr.write(w) }
func (wr *waitResponse) VisitJoinThreadRunResponse(w http.ResponseWriter) error { return wr.write(w) }
func (wr *waitResponse) VisitWaitRunByIdResponse(w http.ResponseWriter) error   { return wr.write(w) }

// startWait creates a run and waits for it.
func (h *Handler) startWait(ctx context.Context, b *api.RunCreate, threadID *uuid.UUID, apShape bool) (*waitResponse, error) {
	_, r, err := h.createRun(ctx, b, threadID)
	if err != nil {
		return nil, err
	}
	wr := newWaitResponse(ctx, h.runs, r, apShape)
	wr.contentLocation = runLocation(r)
	wr.location = joinLocation(r) // where a client reconnects to wait
	if onDisconnectCancel(b) {
		wr.onDisconnect = h.cancelInBackground(r)
	}
	return wr, nil
}

// WaitThreadRun implements POST /threads/{thread_id}/runs/wait.
func (h *Handler) WaitThreadRun(ctx context.Context, req api.WaitThreadRunRequestObject) (api.WaitThreadRunResponseObject, error) {
	tid := req.ThreadId
	return h.startWait(ctx, req.Body, &tid, false)
}

// WaitRun implements POST /runs/wait.
func (h *Handler) WaitRun(ctx context.Context, req api.WaitRunRequestObject) (api.WaitRunResponseObject, error) {
	return h.startWait(ctx, req.Body, bodyThread(req.Body), isAPDialect(req.Body))
}

// joinLocation is the path that waits for r again. As on LangGraph Platform
// it is the thread route even for a stateless run: its temporary thread is
// served while the run lives and its outcome is retained after.
func joinLocation(r storage.Run) string {
	return "/threads/" + r.ThreadID.String() + "/runs/" + r.RunID.String() + "/join"
}

// joinWait waits for an existing run.
func (h *Handler) joinWait(ctx context.Context, threadID *uuid.UUID, runID uuid.UUID, cancelParam *string, apShape bool) (*waitResponse, error) {
	cancelOnDisconnect, err := parseBool(cancelParam, false)
	if err != nil {
		return nil, err
	}
	r, err := h.runs.Get(ctx, threadID, runID)
	if err != nil {
		return nil, err
	}
	wr := newWaitResponse(ctx, h.runs, r, apShape)
	if cancelOnDisconnect {
		wr.onDisconnect = h.cancelInBackground(r)
	}
	return wr, nil
}

// JoinThreadRun implements GET /threads/{thread_id}/runs/{run_id}/join.
func (h *Handler) JoinThreadRun(ctx context.Context, req api.JoinThreadRunRequestObject) (api.JoinThreadRunResponseObject, error) {
	tid := req.ThreadId
	return h.joinWait(ctx, &tid, req.RunId, req.Params.CancelOnDisconnect, false)
}

// WaitRunById implements the Agent Protocol's GET /runs/{run_id}/wait.
func (h *Handler) WaitRunById(ctx context.Context, req api.WaitRunByIdRequestObject) (api.WaitRunByIdResponseObject, error) {
	return h.joinWait(ctx, nil, req.RunId, nil, true)
}

// JoinThreadStream implements GET /threads/{thread_id}/stream: one stream
// across every run of the thread, until the client leaves.
func (h *Handler) JoinThreadStream(ctx context.Context, req api.JoinThreadStreamRequestObject) (api.JoinThreadStreamResponseObject, error) {
	if _, err := h.threads.Get(ctx, req.ThreadId); err != nil {
		return nil, err
	}
	mode := "run_modes"
	modes := parseList(req.Params.StreamMode)
	if len(modes) == 0 {
		modes = parseList(req.Params.StreamModes) // the LangGraph Platform spelling
	}
	if len(modes) > 0 {
		mode = modes[0]
	}
	switch mode {
	case "run_modes", "lifecycle", "state_update":
	default:
		return nil, invalidf("stream_mode must be run_modes, lifecycle or state_update")
	}
	sub, err := h.runs.SubscribeThread(ctx, req.ThreadId, deref(req.Params.LastEventID))
	if err != nil {
		return nil, err
	}
	resp := &streamResponse{ctx: ctx, runs: h.runs, sub: sub, withIDs: true}
	switch mode {
	case "lifecycle":
		resp.filter = map[string]bool{"metadata": true, "run_done": true}
	case "state_update":
		resp.filter = map[string]bool{"values": true, "run_done": true}
	}
	return resp, nil
}
