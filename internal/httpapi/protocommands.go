package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"agentserver/internal/errdefs"
	"agentserver/internal/protostream"
	"agentserver/internal/runs"
	"agentserver/internal/storage"
	"agentserver/internal/threads"
)

// The commands of the thread-centric protocol (POST
// /threads/{thread_id}/commands and in-band on its WebSocket).

// protoCommand is one command: {id, method, params}.
type protoCommand struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// protoError is a command failure with its protocol error code.
type protoError struct {
	code, msg string
}

func (e *protoError) Error() string { return e.msg }

func protoErrorf(code, format string, args ...any) *protoError {
	return &protoError{code: code, msg: fmt.Sprintf(format, args...)}
}

// response builds the success or error envelope of a command.
func (h *Handler) protoResponse(threadID uuid.UUID, id *int64, result any, err error) map[string]any {
	var idv any
	if id != nil {
		idv = *id
	}
	if err != nil {
		code, msg := protoErrorCode(err), err.Error()
		return map[string]any{"type": "error", "id": idv, "error": code, "message": msg}
	}
	if result == nil {
		result = map[string]any{}
	}
	return map[string]any{"type": "success", "id": idv, "result": result, "meta": map[string]any{"applied_through_seq": h.stream.LastSeq(threadID)}}
}

// protoErrorCode maps an error to the protocol's codes.
func protoErrorCode(err error) string {
	var pe *protoError
	switch {
	case errors.As(err, &pe):
		return pe.code
	case errors.Is(err, errdefs.ErrInvalid), errors.Is(err, errdefs.ErrConflict), errors.Is(err, errdefs.ErrNotFound):
		return "invalid_argument"
	case errors.Is(err, errdefs.ErrUnauthorized):
		return "permission_denied"
	}
	return "unknown_error"
}

// protoHandlers are the commands both transports serve.
var protoHandlers = map[string]func(h *Handler, ctx context.Context, threadID uuid.UUID, params json.RawMessage) (any, error){
	"run.start":             (*Handler).protoRunStart,
	"input.respond":         (*Handler).protoInputRespond,
	"input.inject":          (*Handler).protoInputInject,
	"state.get":             (*Handler).protoStateGet,
	"state.listCheckpoints": (*Handler).protoListCheckpoints,
	"state.fork":            (*Handler).protoStateFork,
	"agent.getTree":         (*Handler).protoAgentTree,
}

// execCommand runs one command and returns its envelope.
func (h *Handler) execCommand(ctx context.Context, threadID uuid.UUID, cmd protoCommand) map[string]any {
	if cmd.ID == nil || *cmd.ID < 0 {
		return h.protoResponse(threadID, nil, nil, protoErrorf("invalid_argument", "a command needs a non-negative integer id"))
	}
	fn, ok := protoHandlers[cmd.Method]
	if !ok {
		return h.protoResponse(threadID, cmd.ID, nil, protoErrorf("unknown_command", "unknown command %q", cmd.Method))
	}
	result, err := fn(h, ctx, threadID, cmd.Params)
	return h.protoResponse(threadID, cmd.ID, result, err)
}

// decodeParams reads a command's params into v; absent params are {}.
func decodeParams(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return protoErrorf("invalid_argument", "params: %v", err)
	}
	return nil
}

type runStartParams struct {
	AssistantID string `json:"assistant_id"`
	Input       any    `json:"input"`
	// Command, when not empty, is the run's command and its input is
	// ignored, as on the run routes.
	Command            map[string]any `json:"command"`
	Config             map[string]any `json:"config"`
	Metadata           map[string]any `json:"metadata"`
	Context            map[string]any `json:"context"`
	MultitaskStrategy  string         `json:"multitask_strategy"`
	MultitaskStrategy2 string         `json:"multitaskStrategy"`
}

// protoRunStart starts a run on the thread (creating the thread when it
// does not exist), or resumes it with the input when it is interrupted.
// A command, when given, is the run's command instead (it takes precedence
// over the input). Runs already active are followed by this one (strategy
// enqueue unless another is asked).
func (h *Handler) protoRunStart(ctx context.Context, threadID uuid.UUID, raw json.RawMessage) (any, error) {
	var p runStartParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.AssistantID == "" {
		return nil, protoErrorf("invalid_argument", "assistant_id is required")
	}
	strategy := firstNonEmpty(p.MultitaskStrategy, p.MultitaskStrategy2, runs.StrategyEnqueue)
	if err := h.validator.checkField("MultitaskStrategy", "multitask_strategy", strategy); err != nil {
		return nil, err
	}
	cp := runs.CreateParams{Assistant: p.AssistantID, Input: p.Input, Command: p.Command, Config: p.Config, Metadata: p.Metadata, Context: p.Context, MultitaskStrategy: strategy, IfNotExists: "create"}
	if len(p.Command) > 0 {
		if err := checkGoto(p.Command["goto"], true); err != nil {
			return nil, err
		}
	} else if th, err := h.threads.Get(ctx, threadID); err == nil && th.Status == threads.StatusInterrupted {
		cp.Input, cp.Command = nil, map[string]any{"resume": p.Input}
	}
	r, err := h.startProtoRun(ctx, threadID, cp)
	if err != nil {
		return nil, err
	}
	return map[string]any{"run_id": r.RunID.String()}, nil
}

// startProtoRun creates a run on a thread the stream follows from the
// run's first event.
func (h *Handler) startProtoRun(ctx context.Context, threadID uuid.UUID, cp runs.CreateParams) (storage.Run, error) {
	if err := h.stream.MarkRunRequested(threadID); err != nil {
		return storage.Run{}, err
	}
	cp.ThreadID = &threadID
	r, err := h.runs.Create(ctx, cp)
	if errors.Is(err, errdefs.ErrNotFound) {
		return r, protoErrorf("invalid_argument", "%v", err)
	}
	return r, err
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

type respondEntry struct {
	Namespace   []string `json:"namespace"`
	InterruptID string   `json:"interrupt_id"`
	Response    any      `json:"response"`
}

type respondParams struct {
	respondEntry
	Responses []respondEntry `json:"responses"`
	Update    map[string]any `json:"update"`
	Goto      any            `json:"goto"`
	Config    map[string]any `json:"config"`
	Metadata  map[string]any `json:"metadata"`
}

// protoInputRespond resumes the interrupted thread with answers to its
// pending interrupts (one, or several at once), in a new run.
func (h *Handler) protoInputRespond(ctx context.Context, threadID uuid.UUID, raw json.RawMessage) (any, error) {
	var p respondParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	entries := p.Responses
	if len(entries) == 0 {
		entries = []respondEntry{p.respondEntry}
	}
	th, err := h.threads.Get(ctx, threadID)
	if err != nil {
		return nil, protoErrorf("no_such_interrupt", "thread %s has no pending interrupts", threadID)
	}
	pending := pendingInterruptIDs(th)
	resume := map[string]any{}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.InterruptID == "" {
			return nil, protoErrorf("invalid_argument", "interrupt_id is required")
		}
		if th.Status != threads.StatusInterrupted || !pending[e.InterruptID] {
			return nil, protoErrorf("no_such_interrupt", "interrupt %q is not pending on thread %s", e.InterruptID, threadID)
		}
		resume[e.InterruptID] = e.Response
		ids = append(ids, e.InterruptID)
	}
	command := map[string]any{"resume": resume}
	if p.Update != nil {
		command["update"] = p.Update
	}
	if p.Goto != nil {
		command["goto"] = p.Goto
	}
	h.stream.PublishAnswered(threadID, ids)
	_, err = h.startProtoRun(ctx, threadID, runs.CreateParams{Assistant: threadAssistant(th), Command: command, Config: p.Config, Metadata: p.Metadata, MultitaskStrategy: runs.StrategyEnqueue})
	return nil, err
}

// pendingInterruptIDs lists the ids of the interrupts a thread waits on.
func pendingInterruptIDs(th threads.Thread) map[string]bool {
	out := map[string]bool{}
	for _, list := range th.Interrupts {
		items, _ := list.([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				if id, ok := m["id"].(string); ok {
					out[id] = true
				}
			}
		}
	}
	return out
}

// threadAssistant is the assistant of the thread's runs.
func threadAssistant(th threads.Thread) string {
	for _, k := range []string{"assistant_id", "graph_id"} {
		if s, ok := th.Metadata[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// protoInputInject adds a user (or system) message to the thread: it is
// queued as the input of the next run, after the active one.
func (h *Handler) protoInputInject(ctx context.Context, threadID uuid.UUID, raw json.RawMessage) (any, error) {
	var p struct {
		Message map[string]any `json:"message"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	role, _ := p.Message["role"].(string)
	if _, ok := p.Message["content"].(string); !ok || role != "user" && role != "system" {
		return nil, protoErrorf("invalid_argument", "message needs a role (user or system) and a string content")
	}
	th, err := h.threads.Get(ctx, threadID)
	if err != nil {
		return nil, protoErrorf("no_such_run", "thread %s has no run to inject into", threadID)
	}
	_, err = h.startProtoRun(ctx, threadID, runs.CreateParams{Assistant: threadAssistant(th), Input: map[string]any{"messages": []any{p.Message}}, MultitaskStrategy: runs.StrategyEnqueue})
	return nil, err
}

// rootOnly refuses namespaces other than the root: state lives in the
// thread's own checkpoints.
func rootOnly(ns []string) error {
	if len(ns) > 0 {
		return protoErrorf("no_such_namespace", "namespace %v has no state of its own", ns)
	}
	return nil
}

func (h *Handler) protoStateGet(ctx context.Context, threadID uuid.UUID, raw json.RawMessage) (any, error) {
	var p struct {
		Namespace []string `json:"namespace"`
		Keys      []string `json:"keys"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := rootOnly(p.Namespace); err != nil {
		return nil, err
	}
	st, err := h.threads.GetState(ctx, threadID, nil)
	if err != nil {
		return nil, protoErrorf("invalid_argument", "%v", err)
	}
	values := orEmpty(st.Values)
	if len(p.Keys) > 0 {
		picked := map[string]any{}
		for _, k := range p.Keys {
			if v, ok := values[k]; ok {
				picked[k] = v
			}
		}
		values = picked
	}
	out := map[string]any{"values": values}
	if st.Checkpoint != nil {
		out["checkpoint"] = map[string]any{"id": st.Checkpoint.CheckpointID.String(), "ns": st.Checkpoint.CheckpointNS}
	}
	return out, nil
}

func (h *Handler) protoListCheckpoints(ctx context.Context, threadID uuid.UUID, raw json.RawMessage) (any, error) {
	var p struct {
		Namespace []string `json:"namespace"`
		Limit     int      `json:"limit"`
		Before    string   `json:"before"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := rootOnly(p.Namespace); err != nil {
		return nil, err
	}
	q := threads.HistoryQuery{Limit: p.Limit}
	if q.Limit <= 0 {
		q.Limit = 10
	}
	if p.Before != "" {
		id, err := uuid.Parse(p.Before)
		if err != nil {
			return nil, protoErrorf("invalid_argument", "before %q is not a checkpoint id", p.Before)
		}
		q.Before = &id
	}
	states, err := h.threads.History(ctx, threadID, q)
	if err != nil {
		return nil, protoErrorf("invalid_argument", "%v", err)
	}
	list := make([]map[string]any, 0, len(states))
	for _, st := range states {
		list = append(list, checkpointSummary(st))
	}
	return map[string]any{"checkpoints": list}, nil
}

// checkpointSummary is a state as the protocol lists checkpoints.
func checkpointSummary(st threads.State) map[string]any {
	out := map[string]any{"step": st.Metadata["step"], "metadata": orEmpty(st.Metadata)}
	if st.Checkpoint != nil {
		out["id"] = st.Checkpoint.CheckpointID.String()
	}
	if st.CreatedAt != nil {
		out["timestamp"] = st.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	if out["step"] == nil {
		out["step"] = 0
	}
	if writes, ok := st.Metadata["writes"].(map[string]any); ok {
		for node := range writes {
			out["node_name"] = node
			break
		}
	}
	return out
}

// protoStateFork starts a run from an earlier checkpoint of the thread.
func (h *Handler) protoStateFork(ctx context.Context, threadID uuid.UUID, raw json.RawMessage) (any, error) {
	var p struct {
		CheckpointID string         `json:"checkpoint_id"`
		Input        any            `json:"input"`
		Config       map[string]any `json:"config"`
	}
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	cid, err := uuid.Parse(p.CheckpointID)
	if err != nil {
		return nil, protoErrorf("invalid_argument", "checkpoint_id %q is not a checkpoint id", p.CheckpointID)
	}
	th, err := h.threads.Get(ctx, threadID)
	if err != nil {
		return nil, protoErrorf("no_such_checkpoint", "thread %s does not exist", threadID)
	}
	if _, err := h.threads.GetState(ctx, threadID, &cid); err != nil {
		return nil, protoErrorf("no_such_checkpoint", "checkpoint %s is not a checkpoint of thread %s", cid, threadID)
	}
	r, err := h.startProtoRun(ctx, threadID, runs.CreateParams{Assistant: threadAssistant(th), Input: p.Input, Config: p.Config, CheckpointID: &cid, MultitaskStrategy: runs.StrategyEnqueue})
	if err != nil {
		return nil, err
	}
	return map[string]any{"run_id": r.RunID.String(), "thread_id": threadID.String()}, nil
}

func (h *Handler) protoAgentTree(ctx context.Context, threadID uuid.UUID, _ json.RawMessage) (any, error) {
	tree := h.stream.Tree(threadID)
	if err := h.settleRootStatus(ctx, threadID, tree); err != nil {
		return nil, err
	}
	return map[string]any{"tree": tree}, nil
}

// settleRootStatus gives the tree's root the status of the thread's
// current run (the running one, else the newest) when the stream has not
// announced that run: it was accepted and has not started, or it started
// before anyone followed the thread. A run the stream announced keeps the
// stream's status, which leads the run's record by its end commit.
func (h *Handler) settleRootStatus(ctx context.Context, threadID uuid.UUID, root *protostream.TreeNode) error {
	current, ok, err := h.currentRun(ctx, threadID)
	if err != nil || !ok || current.RunID.String() == root.RunID {
		return err
	}
	root.GraphName = current.GraphID
	switch current.Status {
	case storage.RunPending:
		root.Status = "started"
	case storage.RunRunning:
		root.Status = "running"
	case storage.RunSuccess:
		root.Status = "completed"
		if th, err := h.threads.Get(ctx, threadID); err == nil && th.Status == threads.StatusInterrupted {
			root.Status = "interrupted"
		}
	default: // error, timeout, cancelled: what RunEnded announces as failed
		root.Status = "failed"
	}
	return nil
}

// currentRun is the thread's running run, else its newest; ok is false
// when the thread has none (or does not exist yet).
func (h *Handler) currentRun(ctx context.Context, threadID uuid.UUID) (storage.Run, bool, error) {
	for _, status := range []string{storage.RunRunning, ""} {
		runs, _, err := h.runs.List(ctx, threadID, status, 1, 0)
		if err != nil {
			if errors.Is(err, errdefs.ErrNotFound) {
				err = nil // a thread not made yet has no run: the bare root
			}
			return storage.Run{}, false, err
		}
		if len(runs) > 0 {
			return runs[0], true, nil
		}
	}
	return storage.Run{}, false, nil
}
