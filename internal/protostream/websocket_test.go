package protostream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"agentserver/internal/llm/scripted"
	"agentserver/internal/testutil"
)

// wsClient is a test's protocol WebSocket on one thread.
type wsClient struct {
	t    *testing.T
	ctx  context.Context
	conn *websocket.Conn
	// pinged is set when a ping arrives (the client answers it while it
	// reads); the test may reset it.
	pinged bool
}

// dialProtocol opens the thread's protocol WebSocket; it is closed at the
// end of the test.
func dialProtocol(t *testing.T, s *testutil.Server, tid string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	url := strings.Replace(s.URL(), "http://", "ws://", 1) + "/threads/" + tid + "/stream/events"
	c := &wsClient{t: t, ctx: ctx}
	onPing := func(context.Context, []byte) bool {
		c.pinged = true
		return true
	}
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{OnPingReceived: onPing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.CloseNow() })
	c.conn = conn
	return c
}

// send writes one command.
func (c *wsClient) send(id int, method string, params any) {
	c.t.Helper()
	raw, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	if err := c.conn.Write(c.ctx, websocket.MessageText, raw); err != nil {
		c.t.Fatal(err)
	}
}

// read returns the next frame, decoded.
func (c *wsClient) read() map[string]any {
	c.t.Helper()
	_, raw, err := c.conn.Read(c.ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		c.t.Fatal(err)
	}
	return m
}

// isRootEndFrame reports whether a WebSocket frame is the root's terminal
// lifecycle event.
func isRootEndFrame(m map[string]any) bool {
	return isRootEnd(testutil.SSEEvent{Data: m})
}

// frameSeq is the seq of an event frame.
func frameSeq(m map[string]any) int64 {
	return int64(m["seq"].(float64))
}

// The WebSocket on the same path takes commands and delivers the events
// of its subscriptions: a subscription's replay, then a ping, then its
// response once the client has answered the ping (so that the client has
// read the replay before the response); reconnect replays after
// last_event_id the same way; unsubscribe stops them.
func TestProtocolWebSocket(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Text("over the socket"))
	tid := uuid.NewString()
	c := dialProtocol(t, s, tid)
	c.send(1, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("hi")})
	if m := c.read(); m["type"] != "success" || m["id"] != float64(1) {
		t.Fatalf("run.start = %v", m)
	}
	// The run is over once its root terminal event is in the feed (the
	// tree's root reads "completed" before a run has started, too).
	readUntilRootEnd(t, testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"lifecycle"}}, nil))
	c.send(2, "subscription.subscribe", map[string]any{"channels": []string{"lifecycle", "messages"}})
	var subID string
	var methods []string
	var seqs []int64
	for subID == "" {
		m := c.read()
		switch m["type"] {
		case "success":
			subID = m["result"].(map[string]any)["subscription_id"].(string)
		case "event":
			methods = append(methods, m["method"].(string))
			seqs = append(seqs, frameSeq(m))
			c.pinged = false
		default:
			t.Fatalf("unexpected frame %v", m)
		}
	}
	if !c.pinged {
		t.Fatal("the subscribe response came with no ping after the replay")
	}
	if len(methods) < 3 || methods[0] != "lifecycle" || !slices.Contains(methods, "messages") || methods[len(methods)-1] != "lifecycle" {
		t.Fatalf("subscription %q got %v before its response", subID, methods)
	}
	// reconnect replays after last_event_id, under the same subscription
	// id, before its response.
	c.send(30, "subscription.reconnect", map[string]any{"last_event_id": fmt.Sprint(seqs[0]), "subscriptions": []string{subID}})
	for replayed := 0; ; replayed++ {
		m := c.read()
		if m["type"] == "success" && m["id"] == float64(30) {
			if m["result"].(map[string]any)["restored"] != true || replayed != len(seqs)-1 || !c.pinged {
				t.Fatalf("reconnect answered %v after %d of %d events (a ping after them: %v)", m, replayed, len(seqs)-1, c.pinged)
			}
			break
		}
		c.pinged = false
		if m["type"] != "event" || frameSeq(m) != seqs[1+replayed] {
			t.Fatalf("replayed frame %d = %v, want the event %d", replayed, m, seqs[1+replayed])
		}
	}
	c.send(3, "subscription.unsubscribe", map[string]any{"subscription_id": subID})
	if m := c.read(); m["type"] != "success" {
		t.Fatalf("unsubscribe = %v", m)
	}
	c.send(4, "subscription.unsubscribe", map[string]any{"subscription_id": subID})
	if m := c.read(); m["error"] != "no_such_subscription" {
		t.Fatalf("second unsubscribe = %v", m)
	}
	c.send(5, "nope", nil)
	if m := c.read(); m["error"] != "unknown_command" || m["id"] != float64(5) {
		t.Fatalf("unknown command = %v", m)
	}
}

// Subscriptions sent in one burst after the run is over (as the JS SDK
// sends its projections' subscriptions after run.start) each get the
// whole run before their response: the SDK ends a projection one
// macrotask after the root's terminal event, so a replay that reaches the
// projection after it started reading, behind another subscription's
// terminal event, is lost to it.
func TestProtocolWebSocketReplayPrecedesResponse(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Step{Text: "one two three four", Chunks: 4})
	tid := uuid.NewString()
	testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 1, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("hi")}))
	filters := []map[string]any{
		{"channels": []string{"messages", "lifecycle", "input"}},
		{"channels": []string{"lifecycle", "input"}},
		{"channels": []string{"values", "lifecycle", "input"}},
	}
	// What each must have: the run's events for its filter, as the SSE
	// stream gives them (which also waits for the run's end).
	want := make([][]string, len(filters))
	for i, f := range filters {
		for _, ev := range readUntilRootEnd(t, testutil.ProtocolEvents(t, s, tid, f, nil)) {
			want[i] = append(want[i], ev.ID)
		}
	}
	c := dialProtocol(t, s, tid)
	for i, f := range filters {
		c.send(10+i, "subscription.subscribe", f)
	}
	seen := map[string]bool{}
	for answered := 0; answered < len(filters); {
		m := c.read()
		switch m["type"] {
		case "event":
			seen[fmt.Sprint(m["event_id"])] = true
		case "success":
			i := int(m["id"].(float64)) - 10
			for _, id := range want[i] {
				if !seen[id] {
					t.Fatalf("subscription %v answered before its event %s", filters[i]["channels"], id)
				}
			}
			answered++
		default:
			t.Fatalf("unexpected frame %v", m)
		}
	}
}

// Live events go out once each, in seq order, whatever the number of
// subscriptions that want them: the JS SDK hands an event to every
// subscription whose filter matches it, so an event that trails the
// root's terminal event on the socket is lost to its projections.
func TestProtocolWebSocketSendsEventsOnceInOrder(t *testing.T) {
	s, model := testutil.StartAgent(t, "")
	model.Script(scripted.Text("first"), scripted.Step{Text: "the second answer", Chunks: 3})
	tid := uuid.NewString()
	testutil.MustSucceed(t, testutil.ProtocolCommand(t, s, tid, 1, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("one")}))
	first := readUntilRootEnd(t, testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"lifecycle"}}, nil))
	firstEnd := eventSeq(t, first[len(first)-1])
	c := dialProtocol(t, s, tid)
	c.send(2, "subscription.subscribe", map[string]any{"channels": []string{"lifecycle", "messages"}})
	c.send(3, "subscription.subscribe", map[string]any{"channels": []string{"lifecycle", "values"}})
	for answered := 0; answered < 2; {
		if m := c.read(); m["type"] == "success" {
			answered++
		} else if m["type"] != "event" || frameSeq(m) > firstEnd {
			t.Fatalf("frame %v while subscribing after the first run", m)
		}
	}
	c.send(4, "run.start", map[string]any{"assistant_id": "agent", "input": testutil.UserInput("two")})
	var got []string
	last := firstEnd
	for done := false; !done; {
		m := c.read()
		switch m["type"] {
		case "success":
			continue
		case "event":
		default:
			t.Fatalf("unexpected frame %v", m)
		}
		if seq := frameSeq(m); seq <= last {
			t.Fatalf("event %d (%s) after event %d: %v", seq, m["method"], last, got)
		}
		last = frameSeq(m)
		got = append(got, fmt.Sprint(m["event_id"]))
		done = isRootEndFrame(m)
	}
	var want []string
	for _, ev := range readUntilRootEnd(t, testutil.ProtocolEvents(t, s, tid, map[string]any{"channels": []string{"lifecycle", "messages", "values"}, "since": firstEnd}, nil)) {
		want = append(want, ev.ID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the second run over the socket: %v, want %v", got, want)
	}
}
