package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"agentserver/internal/authz"
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
// thread exists (mustExist) and that the caller may read it.
func (h *Handler) protoThread(c echo.Context, mustExist bool) (uuid.UUID, error) {
	id, err := uuid.Parse(c.Param("thread_id"))
	if err != nil {
		return id, invalidf("thread_id must be a UUID")
	}
	ctx := c.Request().Context()
	if mustExist || authz.Restricted(ctx) {
		// A per-user caller reaches only their own threads, and threads
		// not made yet (which a command may create as theirs): another
		// user's thread is missing to them, on every transport.
		if _, err := h.threads.Get(ctx, id); err != nil && (mustExist || h.threads.Exists(ctx, id)) {
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
