package jsworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/errdefs"
	"agentserver/internal/graph"
	"agentserver/internal/jsonx"
)

// session is one run on a worker: it answers the worker's checkpointer
// from the run's own checkpoints (kept in memory while it runs) and the
// thread's stored ones, and hands every checkpoint to the run's sink once
// both halves of it arrived: the native checkpoint (put) and the state
// the API shows (snapshot).
type session struct {
	in    graph.Input
	sink  graph.Sink
	store Store

	mu  sync.Mutex
	cps map[cpKey]*jsCheckpoint
	// latest is the newest checkpoint put during the run, per namespace.
	latest map[string]*jsCheckpoint
	// from is the checkpoint the run starts from (nil: an empty thread).
	from *jsCheckpoint
	// head is the thread's newest stored checkpoint when the run named
	// from (in.Addressed), read when the worker first asks for it.
	head     *jsCheckpoint
	headRead bool
	// update is set for a state update (no run): its checkpoints name no
	// run.
	update bool
	closed bool
	// ready are the complete checkpoints not yet handed to the sink, in
	// the order they became complete (handReady).
	ready []*jsCheckpoint
	// refused is the first write of the worker the session refused (a
	// put or putWrites naming another thread or an unknown checkpoint);
	// the run fails with it.
	refused error
}

type cpKey struct{ ns, id string }

// jsCheckpoint is one checkpoint of a JavaScript graph as the session
// holds it.
type jsCheckpoint struct {
	id     uuid.UUID
	ns     string
	parent string
	// checkpoint and metadata are the saver's serialized forms (nil until
	// the worker put them).
	checkpoint, metadata json.RawMessage
	writes               []pendingWrite
	snap                 *snapshotParams
	created              time.Time
	// stored is the record of a checkpoint read from storage (the run's
	// start): its fields are kept when it is handed back with new writes.
	stored *graph.Checkpoint
	// handed: the sink has it; dirty: writes arrived since.
	handed, dirty bool
}

// pendingWrite is one write of a task against a checkpoint (LangGraph's
// pending writes: a task's channel writes, an interrupt, a resume value,
// an error). Value is the saver's typed serialization.
type pendingWrite struct {
	TaskID   string          `json:"task_id"`
	Channel  string          `json:"channel"`
	Idx      int             `json:"idx"`
	Value    json.RawMessage `json:"value"`
	TaskPath string          `json:"task_path"`
}

// native is what Checkpoint.Native holds for a JavaScript graph.
type native struct {
	V          int             `json:"v"`
	Checkpoint json.RawMessage `json:"checkpoint"`
	Metadata   json.RawMessage `json:"metadata"`
	Writes     []pendingWrite  `json:"writes"`
}

// nativeVersion is the version of the native form written today.
const nativeVersion = 1

// snapshotParams is the state of a checkpoint as clients see it, as the
// worker reports it for each checkpoint.
type snapshotParams struct {
	CheckpointID string          `json:"checkpoint_id"`
	CheckpointNS string          `json:"checkpoint_ns"`
	ParentID     string          `json:"parent_id"`
	Values       json.RawMessage `json:"values"`
	Metadata     json.RawMessage `json:"metadata"`
	Next         []string        `json:"next"`
	Tasks        json.RawMessage `json:"tasks"`
}

// tuple is a checkpoint as the worker's saver reads it.
type tuple struct {
	ThreadID     string          `json:"thread_id"`
	CheckpointNS string          `json:"checkpoint_ns"`
	CheckpointID string          `json:"checkpoint_id"`
	ParentID     string          `json:"parent_id,omitempty"`
	Checkpoint   json.RawMessage `json:"checkpoint"`
	Metadata     json.RawMessage `json:"metadata"`
	Writes       []pendingWrite  `json:"writes"`
}

// errNotJS refuses to continue a thread whose checkpoint a JavaScript
// graph did not write.
var errNotJS = errors.New("was not written by a LangGraph.js graph")

func newSession(in graph.Input, sink graph.Sink, store Store) (*session, error) {
	s := &session{in: in, sink: sink, store: store, cps: map[cpKey]*jsCheckpoint{}, latest: map[string]*jsCheckpoint{}}
	if in.From != nil {
		from, err := fromStored(*in.From)
		if err != nil {
			return nil, fmt.Errorf("thread %s: %w", in.ThreadID, err)
		}
		s.from = from
		s.cps[cpKey{"", from.id.String()}] = from
	}
	return s, nil
}

// fromStored decodes a stored checkpoint's native form; a checkpoint
// without one (another graph's) is adopted.
func fromStored(cp graph.Checkpoint) (*jsCheckpoint, error) {
	if len(cp.Native) == 0 {
		checkpoint, metadata, err := adopt(cp)
		if err != nil {
			return nil, err
		}
		out := &jsCheckpoint{id: cp.CheckpointID, ns: cp.CheckpointNS, checkpoint: checkpoint, metadata: metadata, created: cp.CreatedAt, stored: &cp, handed: true}
		if cp.ParentID != nil {
			out.parent = cp.ParentID.String()
		}
		return out, nil
	}
	var n native
	if err := json.Unmarshal(cp.Native, &n); err != nil || n.V != nativeVersion {
		return nil, fmt.Errorf("checkpoint %s: unreadable native form (version %d): %v", cp.CheckpointID, n.V, err)
	}
	out := &jsCheckpoint{id: cp.CheckpointID, ns: cp.CheckpointNS, checkpoint: n.Checkpoint, metadata: n.Metadata, writes: n.Writes,
		created: cp.CreatedAt, stored: &cp, handed: true}
	if cp.ParentID != nil {
		out.parent = cp.ParentID.String()
	}
	return out, nil
}

func (c *jsCheckpoint) tuple(thread uuid.UUID) tuple {
	return tuple{ThreadID: thread.String(), CheckpointNS: c.ns, CheckpointID: c.id.String(), ParentID: c.parent,
		Checkpoint: c.checkpoint, Metadata: c.metadata, Writes: c.writes}
}

// errClosed answers the worker's calls for a run that is over.
var errClosed = &WireError{Name: "RunEnded", Message: "the run is over"}

func (s *session) checkThread(thread string) error {
	if thread != s.in.ThreadID.String() {
		return &WireError{Name: "InvalidThread", Message: fmt.Sprintf("a run of thread %s cannot reach the checkpoints of thread %s", s.in.ThreadID, thread)}
	}
	return nil
}

// refuse records err as the session's refusal of a write unless one is
// recorded already or the session is closed (calls after the run's end
// are dropped); it reports whether it did.
func (s *session) refuse(err error) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.refused != nil {
		return false
	}
	s.refused = err
	return true
}

// refusal is the write the session refused (nil: none).
func (s *session) refusal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// startTuple is the JSON of the tuple the run starts from, null when it
// starts from an empty thread; nil when the worker is to ask for it (a
// run that named a checkpoint the thread does not have).
func (s *session) startTuple() (json.RawMessage, error) {
	if s.in.Addressed && s.from == nil {
		return nil, nil
	}
	if s.from == nil {
		return json.RawMessage("null"), nil
	}
	return json.Marshal(s.from.tuple(s.in.ThreadID))
}

// put stores a checkpoint of the run (checkpoint.put).
func (s *session) put(raw json.RawMessage) error {
	var p struct {
		ThreadID     string          `json:"thread_id"`
		CheckpointNS string          `json:"checkpoint_ns"`
		CheckpointID string          `json:"checkpoint_id"`
		ParentID     string          `json:"parent_id"`
		Checkpoint   json.RawMessage `json:"checkpoint"`
		Metadata     json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	if err := s.checkThread(p.ThreadID); err != nil {
		return err
	}
	id, err := uuid.Parse(p.CheckpointID)
	if err != nil {
		return &WireError{Name: "InvalidCheckpoint", Message: fmt.Sprintf("checkpoint id %q is not a UUID", p.CheckpointID)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	cp := s.entry(p.CheckpointNS, id)
	cp.parent, cp.checkpoint, cp.metadata, cp.created = p.ParentID, p.Checkpoint, p.Metadata, time.Now().UTC()
	s.latest[p.CheckpointNS] = cp
	s.hand(cp)
	return nil
}

// entry returns the session's checkpoint of that id, adding it if new.
func (s *session) entry(ns string, id uuid.UUID) *jsCheckpoint {
	k := cpKey{ns, id.String()}
	cp := s.cps[k]
	if cp == nil {
		cp = &jsCheckpoint{id: id, ns: ns}
		s.cps[k] = cp
	}
	return cp
}

// snapshot records the API's view of a checkpoint (snapshot).
func (s *session) snapshot(raw json.RawMessage) {
	var p snapshotParams
	if json.Unmarshal(raw, &p) != nil {
		return
	}
	id, err := uuid.Parse(p.CheckpointID)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	cp := s.entry(p.CheckpointNS, id)
	if cp.snap != nil && len(p.Metadata) == 0 {
		// A checkpoint described again (a subgraph's when the run
		// paused): its tasks changed, its metadata did not.
		p.Metadata, p.ParentID = cp.snap.Metadata, cp.snap.ParentID
	}
	cp.snap = &p
	if cp.handed {
		cp.dirty = true
	}
	s.hand(cp)
}

// hand readies a checkpoint (of any namespace) for the sink once both
// halves of it are there; s.mu is held. handReady, or the run's end, hands
// it over.
func (s *session) hand(cp *jsCheckpoint) {
	if cp.handed || cp.checkpoint == nil || cp.snap == nil {
		return
	}
	cp.handed = true
	s.ready = append(s.ready, cp)
}

// handReady hands the sink the ready checkpoints, unless the run's newest
// checkpoint has nothing next: the graph is done, its run ends as soon as
// the worker answers, and its last commit takes them all (closeWith), so
// that a short run's checkpoints cost no commit of their own. It is called
// when the connection's reader has handled all the worker sent.
func (s *session) handReady() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.ready) == 0 {
		return
	}
	if last := s.latest[""]; last != nil && last.snap != nil && len(last.snap.Next) == 0 && !s.update {
		return
	}
	for _, cp := range s.ready {
		cp.dirty = false
		_ = s.sink.Checkpoint(context.Background(), s.graphCheckpoint(cp), false) // intermediate: never fails
	}
	s.ready = nil
}

// handAtEnd hands the sink an intermediate checkpoint when the run is
// over: one that its last commit may write (graph.EndWriter).
func (s *session) handAtEnd(cp graph.Checkpoint) {
	if ew, ok := s.sink.(graph.EndWriter); ok {
		ew.CheckpointAtEnd(cp)
		return
	}
	_ = s.sink.Checkpoint(context.Background(), cp, false) // intermediate: never fails
}

// putWrites records a task's writes against a checkpoint
// (checkpoint.putWrites). As in LangGraph's savers, a write at a negative
// index (error, interrupt, resume) replaces the task's earlier one, and
// a regular write already recorded is kept.
func (s *session) putWrites(raw json.RawMessage) error {
	var p struct {
		ThreadID     string `json:"thread_id"`
		CheckpointNS string `json:"checkpoint_ns"`
		CheckpointID string `json:"checkpoint_id"`
		TaskID       string `json:"task_id"`
		TaskPath     string `json:"task_path"`
		Writes       []struct {
			Channel string          `json:"channel"`
			Idx     int             `json:"idx"`
			Value   json.RawMessage `json:"value"`
		} `json:"writes"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	if err := s.checkThread(p.ThreadID); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	cp := s.cps[cpKey{p.CheckpointNS, p.CheckpointID}]
	if cp == nil {
		return &WireError{Name: "InvalidCheckpoint", Message: fmt.Sprintf("writes for checkpoint %s, which this run neither started from nor wrote", p.CheckpointID)}
	}
	for _, w := range p.Writes {
		pw := pendingWrite{TaskID: p.TaskID, Channel: w.Channel, Idx: w.Idx, Value: w.Value, TaskPath: p.TaskPath}
		at := slicesIndex(cp.writes, func(x pendingWrite) bool { return x.TaskID == pw.TaskID && x.Idx == pw.Idx })
		switch {
		case at < 0:
			cp.writes = append(cp.writes, pw)
		case pw.Idx < 0:
			cp.writes[at] = pw
		}
	}
	cp.dirty = true
	return nil
}

func slicesIndex(ws []pendingWrite, f func(pendingWrite) bool) int {
	for i, w := range ws {
		if f(w) {
			return i
		}
	}
	return -1
}

// getTuple answers checkpoint.get: the newest checkpoint of a namespace
// when no id is given (the run's own newest, else the one it started
// from), or the checkpoint of that id.
func (s *session) getTuple(raw json.RawMessage) (map[string]any, error) {
	var p struct {
		ThreadID     string `json:"thread_id"`
		CheckpointNS string `json:"checkpoint_ns"`
		CheckpointID string `json:"checkpoint_id"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if err := s.checkThread(p.ThreadID); err != nil {
		return nil, err
	}
	if p.CheckpointID == "" && p.CheckpointNS == "" && s.in.Addressed {
		if err := s.readHead(); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	var found *jsCheckpoint
	if p.CheckpointID == "" {
		found = s.latest[p.CheckpointNS]
		if found == nil && p.CheckpointNS == "" {
			found = s.from
			if s.in.Addressed {
				found = s.head
			}
		}
	} else {
		found = s.cps[cpKey{p.CheckpointNS, p.CheckpointID}]
	}
	var t *tuple
	if found != nil && found.checkpoint != nil {
		tt := found.tuple(s.in.ThreadID)
		t = &tt
	}
	s.mu.Unlock()
	if t == nil && (p.CheckpointID != "" || p.CheckpointNS != "") {
		var err error
		if t, err = s.readStored(p.CheckpointNS, p.CheckpointID); err != nil {
			return nil, err
		}
	}
	return map[string]any{"tuple": t}, nil
}

// readHead reads the thread's newest stored checkpoint once, for a run or
// an update that named an older one: LangGraph compares the two to tell a
// fork of the past from a resume at the head.
func (s *session) readHead() error {
	s.mu.Lock()
	done := s.headRead
	s.mu.Unlock()
	if done || s.in.Checkpoints == nil {
		return nil
	}
	newest, err := s.in.Checkpoints.ListCheckpoints(context.Background(), s.in.ThreadID, nil, 1)
	if err != nil {
		return err
	}
	var head *jsCheckpoint
	if len(newest) == 1 {
		if head, err = fromStored(newest[0]); err != nil {
			return fmt.Errorf("thread %s: %w", s.in.ThreadID, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.headRead {
		s.head, s.headRead = head, true
		if head != nil && s.cps[cpKey{"", head.id.String()}] == nil {
			s.cps[cpKey{"", head.id.String()}] = head
		}
	}
	return nil
}

// readStored reads a checkpoint of the thread from storage: of namespace
// ns ("": the thread's own), the one of that id, or (nested namespaces
// only) the namespace's newest when idText is empty. It is kept in the
// session, so that the run's writes against it are recorded. nil when
// there is none.
func (s *session) readStored(ns, idText string) (*tuple, error) {
	if s.in.Checkpoints == nil {
		return nil, nil
	}
	var id *uuid.UUID
	if idText != "" {
		parsed, err := uuid.Parse(idText)
		if err != nil {
			return nil, nil
		}
		id = &parsed
	}
	ctx := context.Background()
	var cp graph.Checkpoint
	var err error
	switch {
	case ns != "":
		cp, err = s.in.Checkpoints.ReadNested(ctx, s.in.ThreadID, ns, id)
	case id != nil:
		cp, err = s.in.Checkpoints.ReadCheckpoint(ctx, s.in.ThreadID, *id)
	default:
		return nil, nil
	}
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	js, err := fromStored(cp)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := cpKey{ns, js.id.String()}
	if known := s.cps[k]; known != nil {
		js = known
	} else {
		s.cps[k] = js
	}
	t := js.tuple(s.in.ThreadID)
	return &t, nil
}

// list answers checkpoint.list: the thread's checkpoints, newest first,
// those of the run (not all stored yet) and the stored ones.
func (s *session) list(raw json.RawMessage) (map[string]any, error) {
	var p struct {
		ThreadID     string         `json:"thread_id"`
		CheckpointNS *string        `json:"checkpoint_ns"`
		Before       string         `json:"before"`
		Limit        int            `json:"limit"`
		Filter       map[string]any `json:"filter"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	if err := s.checkThread(p.ThreadID); err != nil {
		return nil, err
	}
	byID := map[cpKey]tuple{}
	if s.in.Checkpoints != nil {
		var stored []graph.Checkpoint
		var err error
		if p.CheckpointNS == nil || *p.CheckpointNS == "" {
			stored, err = s.in.Checkpoints.ListCheckpoints(context.Background(), s.in.ThreadID, nil, 0)
		} else {
			stored, err = s.in.Checkpoints.ListNested(context.Background(), s.in.ThreadID, *p.CheckpointNS, nil, 0)
		}
		if err != nil {
			return nil, err
		}
		for _, cp := range stored {
			if js, err := fromStored(cp); err == nil {
				byID[cpKey{cp.CheckpointNS, cp.CheckpointID.String()}] = js.tuple(s.in.ThreadID)
			}
		}
	}
	s.mu.Lock()
	for k, cp := range s.cps {
		if cp.checkpoint != nil && (p.CheckpointNS == nil || *p.CheckpointNS == k.ns) {
			byID[k] = cp.tuple(s.in.ThreadID)
		}
	}
	s.mu.Unlock()
	out := make([]tuple, 0, len(byID))
	for _, t := range byID {
		if p.Before != "" && t.CheckpointID >= p.Before {
			continue
		}
		if !metadataMatches(t.Metadata, p.Filter) {
			continue
		}
		out = append(out, t)
	}
	// Canonical UUID text sorts as the bytes do: newest first.
	sort.Slice(out, func(i, j int) bool { return out[i].CheckpointID > out[j].CheckpointID })
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	return map[string]any{"tuples": out}, nil
}

func metadataMatches(raw json.RawMessage, filter map[string]any) bool {
	if len(filter) == 0 {
		return true
	}
	var md map[string]any
	if json.Unmarshal(raw, &md) != nil {
		return false
	}
	for k, v := range filter {
		if !reflect.DeepEqual(md[k], v) {
			return false
		}
	}
	return true
}

// event passes a stream event of the run to the sink when someone wants it.
func (s *session) event(raw json.RawMessage) {
	var p struct {
		Mode    string          `json:"mode"`
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(raw, &p) != nil {
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed || !s.wants(p.Mode) {
		return
	}
	var payload any
	if json.Unmarshal(p.Payload, &payload) != nil {
		return
	}
	s.sink.Emit(p.Mode, payload)
}

// wants reports whether the run's sink wants events named mode: "values",
// or "values|outer:task|…" for a nested graph's, wanted when the run also
// wants subgraph events.
func (s *session) wants(mode string) bool {
	base, nested, _ := strings.Cut(mode, "|")
	return s.sink.Wants(base) && (nested == "" || s.sink.Wants(graph.SubgraphsMode))
}

// closeWith ends the session: later calls of the worker for the run fail.
// It hands the sink, in order, every checkpoint whose pending writes
// arrived after it was handed (so that no write the worker was told is
// stored is lost, whatever ended the run), and then the run's last
// checkpoint: as the final checkpoint, with the state the worker read at
// the end (res), when the run succeeded or paused; as an intermediate one
// otherwise (with the state after a failure when the worker sent it), so
// that the failed task's error and the other tasks' writes are kept.
func (s *session) closeWith(res *runResult, ok bool) (graph.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	// The checkpoints not handed yet go with the others handed again.
	for _, cp := range s.ready {
		cp.dirty = true
	}
	s.ready = nil
	last := s.latest[""]
	if last == nil {
		last = s.from
	}
	var out graph.Result
	if res != nil {
		if err := json.Unmarshal(res.Values, &out.Values); err != nil {
			return out, fmt.Errorf("final values: %w", err)
		}
		out.Next = res.Next
		if last != nil && last.id.String() == res.CheckpointID {
			snap := snapshotParams{CheckpointID: res.CheckpointID, Values: res.Values, Next: res.Next, Tasks: res.Tasks}
			if last.snap != nil {
				snap.Metadata, snap.ParentID = last.snap.Metadata, last.snap.ParentID
			}
			last.snap = &snap
			last.dirty = true
		}
	}
	for _, cp := range s.checkpointsByID() {
		if cp != last && cp.handed && cp.dirty {
			cp.dirty = false
			s.handAtEnd(s.graphCheckpoint(cp))
		}
	}
	if last == nil || last.checkpoint == nil || !last.dirty && last.handed && !ok {
		return out, nil
	}
	if last.snap == nil && last.stored == nil {
		return out, nil // never described by the worker: nothing to show
	}
	cp := s.graphCheckpoint(last)
	last.handed, last.dirty = true, false
	if !ok {
		s.handAtEnd(cp)
		return out, nil
	}
	return out, s.sink.Checkpoint(context.Background(), cp, true)
}

// checkpointsByID lists the session's checkpoints of every namespace,
// oldest first; s.mu is held.
func (s *session) checkpointsByID() []*jsCheckpoint {
	out := make([]*jsCheckpoint, 0, len(s.cps))
	for _, cp := range s.cps {
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id.String() < out[j].id.String() })
	return out
}

// graphCheckpoint builds the engine's checkpoint of cp; s.mu is held.
func (s *session) graphCheckpoint(cp *jsCheckpoint) graph.Checkpoint {
	var out graph.Checkpoint
	if cp.stored != nil {
		out = *cp.stored
	} else {
		out = graph.Checkpoint{ThreadID: s.in.ThreadID, CheckpointID: cp.id, CheckpointNS: cp.ns, CreatedAt: cp.created}
		if !s.update {
			runID := s.in.RunID
			out.RunID = &runID
		}
		if parent, err := uuid.Parse(cp.parent); err == nil {
			out.ParentID = &parent
		}
	}
	if snap := cp.snap; snap != nil {
		var values map[string]any
		_ = json.Unmarshal(snap.Values, &values)
		if values == nil {
			values = map[string]any{}
		}
		out.Values = values
		out.Next = snap.Next
		if out.Next == nil {
			out.Next = []string{}
		}
		out.Tasks = decodeTasks(snap.Tasks)
		if cp.stored == nil {
			var md map[string]any
			_ = json.Unmarshal(snap.Metadata, &md)
			out.Metadata = jsonx.Merge(s.in.Metadata, md)
			ids := map[string]any{"thread_id": s.in.ThreadID.String()}
			if !s.update {
				ids["run_id"] = s.in.RunID.String()
			}
			out.Metadata = jsonx.Merge(out.Metadata, ids)
		}
	}
	out.Native, _ = json.Marshal(native{V: nativeVersion, Checkpoint: cp.checkpoint, Metadata: cp.metadata, Writes: cp.writes})
	return out
}

// decodeTasks reads the tasks of a snapshot.
func decodeTasks(raw json.RawMessage) []graph.CheckpointTask {
	var ts []struct {
		ID         string  `json:"id"`
		Name       string  `json:"name"`
		Error      *string `json:"error"`
		Interrupts []any   `json:"interrupts"`
	}
	_ = json.Unmarshal(raw, &ts)
	out := make([]graph.CheckpointTask, len(ts))
	for i, t := range ts {
		interrupts := t.Interrupts
		if interrupts == nil {
			interrupts = []any{}
		}
		out[i] = graph.CheckpointTask{ID: t.ID, Name: t.Name, Error: t.Error, Interrupts: interrupts}
	}
	return out
}
