package protostream

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"agentserver/internal/eventlog"
	"agentserver/internal/storage"
)

// Options tune a Hub.
type Options struct {
	// Retention is how long a thread's events stay replayable after they
	// were published, and how long a thread is followed after its last
	// connection left. Default 10 minutes.
	Retention time.Duration
	// FlushInterval is how often new events are written to the store.
	// Default 100 ms.
	FlushInterval time.Duration
	// Keep and KeepBytes bound the events kept in memory per thread
	// (older ones are read back from the store). Defaults 2048 and 8 MiB.
	Keep      int
	KeepBytes int
	Log       *slog.Logger
}

// Hub owns the protocol feeds of the threads it follows.
type Hub struct {
	db    *storage.DB
	opts  Options
	count atomic.Int32 // len(feeds), read without the lock
	mu    sync.RWMutex
	feeds map[uuid.UUID]*feed
	now   func() time.Time
	async asyncLinks
	// flushMu serializes flushes: a feed's log hands its unsaved events to
	// one save at a time.
	flushMu sync.Mutex
}

// NewHub returns a hub that persists into db.
func NewHub(db *storage.DB, opts Options) *Hub {
	if opts.Retention <= 0 {
		opts.Retention = 10 * time.Minute
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = 100 * time.Millisecond
	}
	if opts.Keep <= 0 {
		opts.Keep = 2048
	}
	if opts.KeepBytes <= 0 {
		opts.KeepBytes = 8 << 20
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Hub{db: db, opts: opts, feeds: map[uuid.UUID]*feed{}, now: time.Now}
}

// Event is one numbered protocol event of a thread.
type Event struct {
	Seq       int64
	Method    string
	Namespace []string
	// Name is the custom event's name ("" for others), for custom:<name>.
	Name string
	// Raw is the whole event envelope, one line of JSON.
	Raw []byte
	// at is when the event was published.
	at time.Time
}

// LogSeq implements eventlog.Entry.
func (e Event) LogSeq() int64 { return e.Seq }

// LogSize implements eventlog.Entry.
func (e Event) LogSize() int { return len(e.Raw) }

// feed is the numbered event stream of one thread: its log (whose cursors
// are the connections) and the translation state that fills it.
type feed struct {
	threadID uuid.UUID
	log      *eventlog.Log[Event]
	// mu guards the fields below and serializes publishing; it is taken
	// before the log's lock.
	mu sync.Mutex
	// touched is when the feed was made or last published to.
	touched time.Time
	// runStart is the Seq of the first event of the thread's latest run:
	// a connection without `since` replays from there.
	runStart int64
	runs     map[uuid.UUID]*translator
	// tree is the status of every namespace seen, for agent.getTree.
	tree map[string]nsState
	// lastValues is the newest root values event (an async task's answer).
	lastValues any
}

type nsState struct {
	Namespace []string
	Status    string
	Graph     string
	RunID     string // the run whose lifecycle event set Status, when it said
}

// feed returns a thread's live feed (nil when it is not followed),
// dropping it when its retention has passed.
func (h *Hub) feed(threadID uuid.UUID) *feed {
	if h.count.Load() == 0 {
		return nil
	}
	h.mu.RLock()
	f := h.feeds[threadID]
	h.mu.RUnlock()
	return f
}

// Observes reports whether a thread is followed.
func (h *Hub) Observes(threadID uuid.UUID) bool {
	return h.feed(threadID) != nil
}

// Follow makes sure a thread is followed and returns its feed.
func (h *Hub) Follow(threadID uuid.UUID) (*feed, error) {
	if f := h.feed(threadID); f != nil {
		return f, nil
	}
	// A one-key read; the feed outlives the request that made it.
	last, err := h.db.LastThreadEventSeq(context.Background(), threadID)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.feeds[threadID]; f != nil {
		return f, nil
	}
	if last == 0 {
		last = h.now().UnixMicro()
	}
	log := eventlog.New[Event](last, nil, eventlog.Options{
		Keep: h.opts.Keep, KeepBytes: h.opts.KeepBytes, Persist: true, ReportGaps: true,
		Clock: func() time.Time { return h.now() },
	})
	f := &feed{threadID: threadID, log: log, runStart: last + 1, touched: h.now(), runs: map[uuid.UUID]*translator{}, tree: map[string]nsState{}}
	h.feeds[threadID] = f
	h.count.Add(1)
	return f, nil
}

// LastSeq returns the Seq of a thread's newest event (0 when the thread is
// not followed).
func (h *Hub) LastSeq(threadID uuid.UUID) int64 {
	if f := h.feed(threadID); f != nil {
		return f.log.LastSeq()
	}
	return 0
}

// MarkRunRequested follows a thread on which a run is about to be
// requested: a connection opened from now on replays from the next event,
// not from the previous run.
func (h *Hub) MarkRunRequested(threadID uuid.UUID) error {
	f, err := h.Follow(threadID)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.runStart = f.log.LastSeq() + 1
	f.mu.Unlock()
	return nil
}

// envelope is the head of an encoded event, up to its data.
func appendEnvelope(b []byte, seq int64, method string, ns []string, node string, at time.Time, data json.RawMessage) []byte {
	b = append(b, `{"type":"event","event_id":"`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, method)
	b = append(b, `,"params":{"namespace":[`...)
	for i, s := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	b = append(b, `],"timestamp":`...)
	b = strconv.AppendInt(b, at.UnixMilli(), 10)
	if node != "" {
		b = append(b, `,"node":`...)
		b = appendJSONString(b, node)
	}
	b = append(b, `,"data":`...)
	b = append(b, data...)
	return append(b, "}}"...)
}

func appendJSONString(b []byte, s string) []byte {
	raw, _ := json.Marshal(s)
	return append(b, raw...)
}

// out is one protocol event before it is numbered.
type out struct {
	method string
	ns     []string
	node   string
	name   string
	data   any
}

// publish numbers events in the feed's log (which keeps them and wakes
// connections). f.mu must be held.
func (h *Hub) publishLocked(f *feed, evs ...out) {
	if len(evs) == 0 {
		return
	}
	now := h.now()
	for _, e := range evs {
		data, err := json.Marshal(e.data)
		if err != nil {
			data, _ = json.Marshal(map[string]any{"event": "error", "message": "unencodable event: " + err.Error()})
		}
		f.log.Append(0, func(seq int64) Event {
			return Event{Seq: seq, Method: e.method, Namespace: e.ns, Name: e.name, Raw: appendEnvelope(nil, seq, e.method, e.ns, e.node, now, data), at: now}
		})
		switch {
		case e.method == "lifecycle":
			f.noteLifecycle(e)
		case e.method == "values" && len(e.ns) == 0:
			f.lastValues = e.data
		}
	}
	f.touched = now
	h.mirrorLocked(f, evs)
}

// noteLifecycle records a namespace's status for agent.getTree.
func (f *feed) noteLifecycle(e out) {
	d, _ := e.data.(map[string]any)
	status, _ := d["event"].(string)
	key := nsKey(e.ns)
	st := f.tree[key]
	st.Namespace, st.Status = e.ns, status
	if g, ok := d["graph_name"].(string); ok {
		st.Graph = g
	}
	if id, ok := d["run_id"].(string); ok {
		st.RunID = id
	}
	f.tree[key] = st
}

func nsKey(ns []string) string {
	k := ""
	for _, s := range ns {
		k += s + "\x00"
	}
	return k
}

// Publish adds events to a followed thread (used by the command handler
// and tests); a thread that is not followed drops them.
func (h *Hub) publish(threadID uuid.UUID, evs ...out) {
	f := h.feed(threadID)
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	h.publishLocked(f, evs...)
}

// Run flushes new events to the store every FlushInterval and drops
// feeds and stored events past their retention, until ctx ends; it then
// flushes once more.
func (h *Hub) Run(ctx context.Context) {
	flush := time.NewTicker(h.opts.FlushInterval)
	defer flush.Stop()
	sweepEvery := min(h.opts.Retention/4, time.Minute)
	sweep := time.NewTicker(max(sweepEvery, time.Second))
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			h.Flush(context.Background())
			return
		case <-flush.C:
			h.Flush(ctx)
		case <-sweep.C:
			h.sweep(ctx)
		}
	}
}

// Flush writes every unsaved event to the store.
func (h *Hub) Flush(ctx context.Context) {
	h.flushMu.Lock()
	defer h.flushMu.Unlock()
	h.mu.RLock()
	feeds := make([]*feed, 0, len(h.feeds))
	for _, f := range h.feeds {
		feeds = append(feeds, f)
	}
	h.mu.RUnlock()
	var wg sync.WaitGroup
	for _, f := range feeds {
		batch := f.log.TakeUnsaved()
		if len(batch) == 0 {
			continue
		}
		wg.Go(func() { h.save(ctx, f, batch) })
	}
	wg.Wait()
}

// save stores a batch; on failure the batch goes back to be retried.
func (h *Hub) save(ctx context.Context, f *feed, batch []Event) {
	rows := make([]storage.ThreadEvent, len(batch))
	for i, ev := range batch {
		rows[i] = storage.ThreadEvent{Seq: ev.Seq, At: ev.at, Event: ev.Raw}
	}
	if err := h.db.AppendThreadEvents(ctx, f.threadID, rows); err != nil {
		h.opts.Log.Warn("store thread stream events", "thread_id", f.threadID, "err", err)
		f.log.SaveFailed()
		return
	}
	f.log.Saved(batch[len(batch)-1].Seq)
}

// sweep drops feeds without connections or events for Retention and
// deletes stored events older than Retention.
func (h *Hub) sweep(ctx context.Context) {
	now := h.now()
	cutoff := now.Add(-h.opts.Retention)
	h.mu.Lock()
	for id, f := range h.feeds {
		// A feed busy publishing is not idle. TryLock, because a publish
		// into a task's parent takes the hub's lock under a feed's.
		if !f.mu.TryLock() {
			continue
		}
		idle := f.log.IdleFor(now) > h.opts.Retention && len(f.runs) == 0 && !f.log.Unsaved() && f.touched.Before(cutoff)
		f.mu.Unlock()
		if idle {
			delete(h.feeds, id)
			h.count.Add(-1)
		}
	}
	h.mu.Unlock()
	if _, err := h.db.DeleteThreadEventsBefore(ctx, cutoff); err != nil && ctx.Err() == nil {
		h.opts.Log.Warn("delete expired thread stream events", "err", err)
	}
}
