package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"agentserver/internal/protostream"
	"agentserver/internal/sse"
)

// The protocol's WebSocket: commands in; their responses and the events
// of the connection's subscriptions out.
//
// Events carry no subscription id: the JS SDK hands an event to every
// subscription of its own whose filter matches it, and one macrotask
// after a root terminal lifecycle event it ends every projection that
// was opened before that event. A subscription that gets an earlier
// event after the terminal loses it. So a connection writes the thread's
// events in one order, each at most once: a single cursor (the pump)
// follows the whole feed and writes an event when any subscription
// wants it. A new subscription first gets its replay, the events up to
// the pump's position that match it, written before its subscribe
// response (the SDK registers a subscription before it sends the
// command), and from then on shares the pump. The response itself waits
// for the client to answer a ping sent after the replay (see
// answerAfterPong).

// protoWebSocket implements GET /threads/{thread_id}/stream/events with
// Upgrade: websocket.
func (h *Handler) protoWebSocket(c echo.Context) error {
	tid, err := h.protoThread(c, false)
	if err != nil {
		return err
	}
	if !strings.EqualFold(c.Request().Header.Get("Upgrade"), "websocket") {
		return echo.NewHTTPError(http.StatusUpgradeRequired, "this path is a WebSocket; the SSE stream is POST")
	}
	// The server's write timeout must not cut a long-lived socket.
	_ = http.NewResponseController(c.Response()).SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(c.Response(), c.Request(), &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return nil // Accept has answered the request
	}
	conn.SetReadLimit(maxCommandBytes)
	ws := &wsSession{h: h, thread: tid, conn: conn, subs: map[string]*wsSub{}}
	ws.serve(c.Request().Context())
	return nil
}

// maxCommandBytes bounds one WebSocket command.
const maxCommandBytes = 4 << 20

// wsSession is one WebSocket connection and its subscriptions.
type wsSession struct {
	h      *Handler
	thread uuid.UUID
	conn   *websocket.Conn
	wg     sync.WaitGroup

	// mu guards the fields below. It is held while the pump writes an
	// event and while a subscription's replay is written, so that the
	// two never interleave.
	mu     sync.Mutex
	subs   map[string]*wsSub
	nextID int
	pump   *wsPump // nil while there is no subscription
	// cursor is the Seq of the last event the pump has handled (written
	// or passed over).
	cursor int64
}

// wsSub is one subscription of a connection.
type wsSub struct {
	filter protostream.Filter
	// from: the pump gives the subscription only events after this Seq
	// (those up to it were its replay).
	from int64
}

// wsPump is the connection's cursor into the thread's feed.
type wsPump struct {
	sub    *protostream.Subscription
	cancel context.CancelFunc
}

// serve reads commands until the client leaves, then ends every
// subscription and waits for the pump and the heartbeat.
func (ws *wsSession) serve(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		ws.closeAll()
		ws.wg.Wait()
		ws.conn.Close(websocket.StatusNormalClosure, "")
	}()
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		ws.heartbeat(ctx, cancel)
	}()
	for {
		_, data, err := ws.conn.Read(ctx)
		if err != nil {
			return
		}
		var cmd protoCommand
		var resp map[string]any
		if err := json.Unmarshal(data, &cmd); err != nil {
			resp = ws.h.protoResponse(ws.thread, nil, nil, protoErrorf("invalid_argument", "a command is a JSON object {id, method, params}"))
		} else {
			resp = ws.exec(ctx, cmd)
		}
		if replays(cmd.Method) {
			ws.wg.Add(1)
			go func() {
				defer ws.wg.Done()
				ws.answerAfterPong(ctx, cancel, resp)
			}()
			continue
		}
		if err := ws.write(ctx, resp); err != nil {
			return
		}
	}
}

// replays reports whether a command writes a replay before its response.
func replays(method string) bool {
	return method == "subscription.subscribe" || method == "subscription.reconnect"
}

// answerAfterPong writes the response to a command that wrote a replay
// once the client has answered a ping sent after it. The JS SDK resolves
// a response at once but hands events to its subscriptions through a
// queue, a few microtasks each: a response that arrived in the same read
// as a long replay could start the subscription's consumer before the
// replay reached it, and after a root terminal event that consumer ends
// as soon as it finds nothing. A client answers the ping after it has
// read everything before it, so the response arrives in a later read,
// after the client has dealt with the replay. The read loop goes on
// meanwhile (it is what reads the pong).
func (ws *wsSession) answerAfterPong(ctx context.Context, drop context.CancelFunc, resp map[string]any) {
	err := ws.ping(ctx)
	if err == nil {
		err = ws.write(ctx, resp)
	}
	if err != nil {
		drop()
	}
}

// heartbeat pings the client; a client that does not answer is dropped.
func (ws *wsSession) heartbeat(ctx context.Context, drop context.CancelFunc) {
	t := time.NewTicker(heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := ws.ping(ctx); err != nil {
				drop()
				return
			}
		}
	}
}

// ping waits, as long as a write may take, for the client to answer a
// ping.
func (ws *wsSession) ping(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, sse.DefaultWriteTimeout)
	defer cancel()
	return ws.conn.Ping(pctx)
}

func (ws *wsSession) write(ctx context.Context, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return ws.writeRaw(ctx, raw)
}

func (ws *wsSession) writeRaw(ctx context.Context, raw []byte) error {
	wctx, cancel := context.WithTimeout(ctx, sse.DefaultWriteTimeout)
	defer cancel()
	return ws.conn.Write(wctx, websocket.MessageText, raw)
}

// exec runs a command: the subscription commands here, the others as on
// POST /commands.
func (ws *wsSession) exec(ctx context.Context, cmd protoCommand) map[string]any {
	switch cmd.Method {
	case "subscription.subscribe":
		var f protostream.Filter
		if err := decodeParams(cmd.Params, &f); err != nil {
			return ws.h.protoResponse(ws.thread, cmd.ID, nil, err)
		}
		id, err := ws.subscribe(ctx, f, nil, "")
		if err != nil {
			return ws.h.protoResponse(ws.thread, cmd.ID, nil, subscribeError(err))
		}
		return ws.h.protoResponse(ws.thread, cmd.ID, map[string]any{"subscription_id": id}, nil)
	case "subscription.unsubscribe":
		var p struct {
			SubscriptionID string `json:"subscription_id"`
		}
		if err := decodeParams(cmd.Params, &p); err != nil {
			return ws.h.protoResponse(ws.thread, cmd.ID, nil, err)
		}
		if !ws.unsubscribe(p.SubscriptionID) {
			return ws.h.protoResponse(ws.thread, cmd.ID, nil, protoErrorf("no_such_subscription", "no subscription %q on this connection", p.SubscriptionID))
		}
		return ws.h.protoResponse(ws.thread, cmd.ID, nil, nil)
	case "subscription.reconnect":
		return ws.reconnect(ctx, cmd)
	}
	return ws.h.execCommand(ctx, ws.thread, cmd)
}

// subscribeError maps a failed subscribe to its protocol error.
func subscribeError(err error) error {
	if errors.Is(err, protostream.ErrInvalidFilter) {
		return protoErrorf("invalid_argument", "%v", err)
	}
	return err
}

// subscribe adds a subscription under id (a new id when empty): it
// writes the subscription's replay (the events after since, or of the
// thread's latest run, up to the pump's position), then lets the pump
// give it the events after that. The caller writes the response after.
func (ws *wsSession) subscribe(ctx context.Context, f protostream.Filter, since *int64, id string) (string, error) {
	replay, err := ws.h.stream.Subscribe(ws.thread, f, since)
	if err != nil {
		return "", err
	}
	defer replay.Close()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.pump == nil {
		if err := ws.startPump(ctx); err != nil {
			return "", err
		}
	}
	defer func() {
		if len(ws.subs) == 0 {
			ws.stopPump() // the replay failed: no subscription needs the pump
		}
	}()
	from := max(replay.Position(), ws.cursor)
	for {
		ev, ok, err := replay.TryNext()
		if err != nil {
			return "", err
		}
		if !ok || ev.Seq > ws.cursor {
			break // the pump delivers the rest
		}
		if err := ws.writeRaw(ctx, ev.Raw); err != nil {
			return "", err
		}
	}
	if id == "" {
		ws.nextID++
		id = "sub-" + strconv.Itoa(ws.nextID)
	}
	ws.subs[id] = &wsSub{filter: f, from: from}
	return id, nil
}

// startPump opens the connection's cursor at the end of the thread's
// feed. ws.mu is held.
func (ws *wsSession) startPump(ctx context.Context) error {
	latest := int64(math.MaxInt64)
	sub, err := ws.h.stream.Subscribe(ws.thread, protostream.AllEvents(), &latest)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(ctx)
	p := &wsPump{sub: sub, cancel: cancel}
	ws.pump = p
	ws.cursor = sub.Position()
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		ws.runPump(ctx, pctx, p)
	}()
	return nil
}

// runPump writes, in order, each event of the feed that a subscription
// wants, until the pump is stopped or a write fails. Writes take the
// connection's context: cancelling a write's context closes the socket,
// and stopping the pump must not.
func (ws *wsSession) runPump(ctx, pctx context.Context, p *wsPump) {
	defer p.sub.Close()
	for {
		ev, err := p.sub.Next(pctx)
		if err != nil {
			return
		}
		ws.mu.Lock()
		if ws.pump != p {
			ws.mu.Unlock()
			return
		}
		ws.cursor = ev.Seq
		if ws.wants(&ev) {
			err = ws.writeRaw(ctx, ev.Raw)
		}
		ws.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// wants reports whether a subscription takes ev from the pump. ws.mu is
// held.
func (ws *wsSession) wants(ev *protostream.Event) bool {
	for _, s := range ws.subs {
		if ev.Seq > s.from && (ev.Method == protostream.GapMethod || s.filter.Matches(ev)) {
			return true
		}
	}
	return false
}

// stopPump ends the pump. ws.mu is held.
func (ws *wsSession) stopPump() {
	if ws.pump == nil {
		return
	}
	ws.pump.cancel()
	ws.pump.sub.Close()
	ws.pump = nil
}

// unsubscribe removes a subscription; the last one stops the pump.
func (ws *wsSession) unsubscribe(id string) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.subs[id] == nil {
		return false
	}
	delete(ws.subs, id)
	if len(ws.subs) == 0 {
		ws.stopPump()
	}
	return true
}

func (ws *wsSession) closeAll() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	clear(ws.subs)
	ws.stopPump()
}

// reconnect restarts the named subscriptions (all, when none is named),
// under the same ids, from the event after last_event_id.
func (ws *wsSession) reconnect(ctx context.Context, cmd protoCommand) map[string]any {
	var p struct {
		LastEventID   string   `json:"last_event_id"`
		Subscriptions []string `json:"subscriptions"`
	}
	if err := decodeParams(cmd.Params, &p); err != nil {
		return ws.h.protoResponse(ws.thread, cmd.ID, nil, err)
	}
	var since *int64
	if p.LastEventID != "" {
		n, err := strconv.ParseInt(p.LastEventID, 10, 64)
		if err != nil {
			return ws.h.protoResponse(ws.thread, cmd.ID, nil, protoErrorf("invalid_argument", "last_event_id %q is not an event seq", p.LastEventID))
		}
		since = &n
	}
	ws.mu.Lock()
	names := p.Subscriptions
	if len(names) == 0 {
		for id := range ws.subs {
			names = append(names, id)
		}
	}
	filters := make([]protostream.Filter, 0, len(names))
	for _, id := range names {
		s := ws.subs[id]
		if s == nil {
			ws.mu.Unlock()
			return ws.h.protoResponse(ws.thread, cmd.ID, nil, protoErrorf("no_such_subscription", "no subscription %q on this connection", id))
		}
		filters = append(filters, s.filter)
	}
	ws.mu.Unlock()
	for i, id := range names {
		ws.unsubscribe(id)
		if _, err := ws.subscribe(ctx, filters[i], since, id); err != nil {
			return ws.h.protoResponse(ws.thread, cmd.ID, nil, subscribeError(err))
		}
	}
	missed := int64(0)
	if since != nil {
		missed = max(ws.h.stream.LastSeq(ws.thread)-*since, 0)
	}
	return ws.h.protoResponse(ws.thread, cmd.ID, map[string]any{"restored": true, "missed_events": missed}, nil)
}
