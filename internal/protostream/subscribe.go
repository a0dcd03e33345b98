package protostream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/google/uuid"

	"agentserver/internal/eventlog"
)

// Filter selects the events a connection receives.
type Filter struct {
	Channels   []string   `json:"channels"`
	Namespaces [][]string `json:"namespaces,omitempty"`
	// Depth bounds how far below a namespace prefix events may be; nil:
	// no bound.
	Depth *int `json:"depth,omitempty"`
}

// knownChannels are the channels a filter may name (besides custom:<name>).
var knownChannels = map[string]bool{
	"values": true, "updates": true, "messages": true, "tools": true, "lifecycle": true,
	"input": true, "checkpoints": true, "tasks": true, "custom": true,
}

// AllEvents is a filter that selects every event of a thread.
func AllEvents() Filter {
	f := Filter{Channels: make([]string, 0, len(knownChannels))}
	for c := range knownChannels {
		f.Channels = append(f.Channels, c)
	}
	sort.Strings(f.Channels)
	return f
}

// ErrInvalidFilter reports a filter the protocol does not allow.
var ErrInvalidFilter = errors.New("invalid event filter")

// Validate checks the channels and depth of a filter.
func (f Filter) Validate() error {
	if len(f.Channels) == 0 {
		return fmt.Errorf("%w: channels must name at least one channel", ErrInvalidFilter)
	}
	for _, c := range f.Channels {
		if !knownChannels[c] && !(strings.HasPrefix(c, "custom:") && len(c) > len("custom:")) {
			return fmt.Errorf("%w: unknown channel %q", ErrInvalidFilter, c)
		}
	}
	if f.Depth != nil && *f.Depth < 0 {
		return fmt.Errorf("%w: depth must not be negative", ErrInvalidFilter)
	}
	return nil
}

// channelOf maps an event to the channel it belongs to.
func channelOf(ev *Event) string {
	switch ev.Method {
	case "input.requested", "input.answered":
		return "input"
	case "custom":
		if ev.Name != "" {
			return "custom:" + ev.Name
		}
	}
	return ev.Method
}

// Matches reports whether the filter selects ev.
func (f Filter) Matches(ev *Event) bool {
	ch := channelOf(ev)
	ok := false
	for _, c := range f.Channels {
		if c == ch || c == "custom" && strings.HasPrefix(ch, "custom:") {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	if len(f.Namespaces) == 0 {
		return f.Depth == nil || len(ev.Namespace) <= *f.Depth
	}
	for _, p := range f.Namespaces {
		if prefixMatch(ev.Namespace, p) && (f.Depth == nil || len(ev.Namespace)-len(p) <= *f.Depth) {
			return true
		}
	}
	return false
}

// prefixMatch reports whether ns starts with prefix; a prefix segment
// without ":" also matches a segment that adds a ":<suffix>" to it.
func prefixMatch(ns, prefix []string) bool {
	if len(prefix) > len(ns) {
		return false
	}
	for i, seg := range prefix {
		if ns[i] == seg {
			continue
		}
		if strings.Contains(seg, ":") {
			return false
		}
		if name, _, _ := strings.Cut(ns[i], ":"); name != seg {
			return false
		}
	}
	return true
}

// GapMethod is the method of the event that reports, in order, events a
// connection asked for that are no longer kept. Its Seq is the last missed
// event's, so a client that resumes after it does not ask again; its Raw
// is a protocol error envelope with the missed range.
const GapMethod = "error"

// gapEvent reports the events from..to as missed.
func gapEvent(from, to int64) Event {
	raw, _ := json.Marshal(map[string]any{
		"type": "error", "id": nil, "error": "unknown_error",
		"message": fmt.Sprintf("events %d to %d are no longer retained", from, to),
		"missed":  map[string]any{"from": from, "to": to},
	})
	return Event{Seq: to, Method: GapMethod, Raw: raw}
}

// ErrClosed is returned by Next after Close.
var ErrClosed = eventlog.ErrClosed

// Subscription is one connection's cursor into a thread's feed, with the
// events it read back from the store when the feed no longer kept them.
// Next must not be called concurrently with itself; Close may be called
// anytime.
type Subscription struct {
	h       *Hub
	f       *feed
	c       *eventlog.Cursor[Event]
	filter  Filter
	after   int64
	backlog []Event // events read back from the store, oldest first
}

// Subscribe opens a connection on a thread's stream. With since (a Seq)
// it replays the kept events after it; without, it replays the events of
// the thread's latest run (whose first values event is the full state),
// then follows live.
func (h *Hub) Subscribe(threadID uuid.UUID, filter Filter, since *int64) (*Subscription, error) {
	if err := filter.Validate(); err != nil {
		return nil, err
	}
	f, err := h.Follow(threadID)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	after := f.runStart - 1
	if since != nil {
		after = *since
	}
	c := f.log.Subscribe(after, filter.Matches)
	f.mu.Unlock()
	return &Subscription{h: h, f: f, c: c, filter: filter, after: c.After()}, nil
}

// readBack loads from the store the events between the cursor and oldest
// (the oldest kept in memory); those the store no longer has either are
// reported by a gap event first.
func (s *Subscription) readBack(ctx context.Context, oldest int64) error {
	stored, err := s.h.db.LoadThreadEvents(ctx, s.f.threadID, s.after)
	if err != nil {
		return err
	}
	first := oldest
	if len(stored) > 0 {
		first = min(stored[0].Seq, oldest)
	}
	if first > s.after+1 {
		s.backlog = append(s.backlog, gapEvent(s.after+1, first-1))
	}
	for _, se := range stored {
		if se.Seq >= oldest {
			break
		}
		ev, err := decodeStored(se.Seq, se.Event)
		if err != nil {
			return err
		}
		s.backlog = append(s.backlog, ev)
	}
	return nil
}

// Next returns the next matching event, waiting for one. It returns
// ctx.Err() when ctx ends and ErrClosed after Close.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	return eventlog.Await(ctx, s.c.Done(), func() (Event, bool, <-chan struct{}, error) { return s.take(ctx) })
}

// TryNext returns the next matching event if one is available now.
func (s *Subscription) TryNext() (Event, bool, error) {
	ev, ok, _, err := s.take(context.Background())
	return ev, ok, err
}

// take returns the next matching event, or the channel to wait on; ctx
// bounds the store reads of a cursor behind what memory keeps.
func (s *Subscription) take(ctx context.Context) (Event, bool, <-chan struct{}, error) {
	for {
		select {
		case <-s.c.Done():
			return Event{}, false, nil, ErrClosed
		default:
		}
		for len(s.backlog) > 0 {
			ev := s.backlog[0]
			s.backlog = s.backlog[1:]
			s.after = ev.Seq
			if len(s.backlog) == 0 {
				s.c.MoveTo(ev.Seq) // the log's events come next
			}
			if ev.Method == GapMethod || s.filter.Matches(&ev) {
				return ev, true, nil, nil
			}
		}
		ev, ok, wake, err := s.c.Take()
		if !errors.Is(err, eventlog.ErrBehind) {
			s.after = s.c.After()
			return ev, ok, wake, err
		}
		// The cursor is behind what memory keeps: read the rest back.
		if err := s.readBack(ctx, s.f.log.Oldest()); err != nil {
			return Event{}, false, nil, err
		}
	}
}

// Position returns the Seq the cursor stands at: the events it returns
// next come after it. It must not be called concurrently with Next.
func (s *Subscription) Position() int64 { return s.after }

// Close ends the connection's subscription.
func (s *Subscription) Close() { s.c.Close() }
