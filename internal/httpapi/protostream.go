package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"agentserver/internal/events"
	"agentserver/internal/protostream"
	"agentserver/internal/sse"
)

// The thread-centric streaming protocol is served by plain echo routes
// beside the generated ones: its SSE stream is opened by a POST with a
// filter body, its WebSocket is a GET upgrade on the same path, and its
// command endpoint answers every failure in-band as a protocol error
// envelope; none of these fits the strict handler's typed responses. The
// routes sit behind the same middleware (API key included).

// registerProtocolRoutes adds the thread-centric protocol's routes.
func registerProtocolRoutes(e *echo.Echo, h *Handler) {
	e.POST("/threads/:thread_id/stream/events", h.protoEventStream)
	e.GET("/threads/:thread_id/stream/events", h.protoWebSocket)
	e.POST("/threads/:thread_id/commands", h.protoCommands)
}

// protoThread parses the thread id of the path and checks that the
// thread exists.
func (h *Handler) protoThread(c echo.Context, mustExist bool) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("thread_id"))
	if err != nil {
		return id, invalidf("thread_id must be a UUID")
	}
	if mustExist {
		if _, err := h.threads.Get(c.Request().Context(), id); err != nil {
			return id, err
		}
	}
	return id, nil
}

// streamRequest is the body of POST /threads/{thread_id}/stream/events.
type streamRequest struct {
	protostream.Filter
	Since *int64 `json:"since"`
}

// protoEventStream implements POST /threads/{thread_id}/stream/events: an
// SSE stream of the thread's events matching the body's filter, replayed
// from `since` (or Last-Event-ID), until the client leaves.
func (h *Handler) protoEventStream(c echo.Context) error {
	tid, err := h.protoThread(c, true)
	if err != nil {
		return err
	}
	var req streamRequest
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return invalidf("the body must be a JSON object {channels, namespaces?, depth?, since?}")
	}
	if req.Since == nil {
		if last := c.Request().Header.Get("Last-Event-ID"); last != "" {
			n, err := strconv.ParseInt(strings.TrimSpace(last), 10, 64)
			if err != nil {
				return invalidf("Last-Event-ID must be an event seq")
			}
			req.Since = &n
		}
	}
	sub, err := h.stream.Subscribe(tid, req.Filter, req.Since)
	if err != nil {
		return protoStreamError(err)
	}
	defer sub.Close()
	ctx := c.Request().Context()
	sw := sse.NewWriter(c.Response())
	_ = sse.Pump(ctx, sw, sseSource{sub}, sse.PumpOptions{Heartbeat: heartbeatEvery, WithIDs: true})
	return nil // the client left or its connection failed: nothing to answer
}

// protoStreamError maps a subscribe failure to an HTTP error.
func protoStreamError(err error) error {
	if errors.Is(err, protostream.ErrInvalidFilter) {
		return invalidf(err.Error())
	}
	return err
}

// sseSource adapts a protocol subscription to the SSE pump.
type sseSource struct{ sub *protostream.Subscription }

func (s sseSource) Next(ctx context.Context) (events.Event, error) {
	ev, err := s.sub.Next(ctx)
	return events.Event{Seq: ev.Seq, Name: ev.Method, Data: ev.Raw}, err
}

func (s sseSource) TryNext() (events.Event, bool, error) {
	ev, ok, err := s.sub.TryNext()
	return events.Event{Seq: ev.Seq, Name: ev.Method, Data: ev.Raw}, ok, err
}

// protoCommands implements POST /threads/{thread_id}/commands.
func (h *Handler) protoCommands(c echo.Context) error {
	tid, err := h.protoThread(c, false)
	if err != nil {
		return err
	}
	var cmd protoCommand
	if err := json.NewDecoder(c.Request().Body).Decode(&cmd); err != nil {
		return c.JSON(http.StatusOK, h.protoResponse(tid, nil, nil, protoErrorf("invalid_argument", "the body must be a command {id, method, params}")))
	}
	return c.JSON(http.StatusOK, h.execCommand(c.Request().Context(), tid, cmd))
}

// protoWebSocket implements the WebSocket of the protocol: commands in,
// responses and the events of its subscriptions out.
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
	mu     sync.Mutex
	subs   map[string]*wsSub
	nextID int
	wg     sync.WaitGroup
	// answered is closed once the response to the command being executed
	// is written: a subscription it starts sends its first event only
	// then, so the client knows the subscription before its events.
	answered chan struct{}
}

type wsSub struct {
	sub    *protostream.Subscription
	filter protostream.Filter
	cancel context.CancelFunc
}

// serve reads commands until the client leaves, then ends every
// subscription and waits for their writers.
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
		ws.answered = make(chan struct{})
		if err := json.Unmarshal(data, &cmd); err != nil {
			resp = ws.h.protoResponse(ws.thread, nil, nil, protoErrorf("invalid_argument", "a command is a JSON object {id, method, params}"))
		} else {
			resp = ws.exec(ctx, cmd)
		}
		err = ws.write(ctx, resp)
		close(ws.answered)
		if err != nil {
			return
		}
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
			pctx, cancel := context.WithTimeout(ctx, sse.DefaultWriteTimeout)
			err := ws.conn.Ping(pctx)
			cancel()
			if err != nil {
				drop()
				return
			}
		}
	}
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
			return ws.h.protoResponse(ws.thread, cmd.ID, nil, protoErrorf("invalid_argument", "%v", err))
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

// subscribe starts a subscription whose events go out on the socket,
// under id (a new id when empty).
func (ws *wsSession) subscribe(ctx context.Context, f protostream.Filter, since *int64, id string) (string, error) {
	sub, err := ws.h.stream.Subscribe(ws.thread, f, since)
	if err != nil {
		return "", err
	}
	sctx, cancel := context.WithCancel(ctx)
	ws.mu.Lock()
	if id == "" {
		ws.nextID++
		id = "sub-" + strconv.Itoa(ws.nextID)
	}
	ws.subs[id] = &wsSub{sub: sub, filter: f, cancel: cancel}
	ws.mu.Unlock()
	answered := ws.answered
	ws.wg.Add(1)
	go func() {
		defer ws.wg.Done()
		defer sub.Close()
		select {
		case <-answered:
		case <-sctx.Done():
			return
		}
		// Writes take the connection's context: cancelling a write's
		// context closes the socket, and unsubscribing must not.
		for {
			ev, err := sub.Next(sctx)
			if err != nil || ws.writeRaw(ctx, ev.Raw) != nil {
				return
			}
		}
	}()
	return id, nil
}

func (ws *wsSession) unsubscribe(id string) bool {
	ws.mu.Lock()
	s := ws.subs[id]
	delete(ws.subs, id)
	ws.mu.Unlock()
	if s == nil {
		return false
	}
	s.cancel()
	s.sub.Close()
	return true
}

func (ws *wsSession) closeAll() {
	ws.mu.Lock()
	ids := make([]string, 0, len(ws.subs))
	for id := range ws.subs {
		ids = append(ids, id)
	}
	ws.mu.Unlock()
	for _, id := range ids {
		ws.unsubscribe(id)
	}
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
			return ws.h.protoResponse(ws.thread, cmd.ID, nil, err)
		}
	}
	missed := int64(0)
	if since != nil {
		missed = max(ws.h.stream.LastSeq(ws.thread)-*since, 0)
	}
	return ws.h.protoResponse(ws.thread, cmd.ID, map[string]any{"restored": true, "missed_events": missed}, nil)
}
