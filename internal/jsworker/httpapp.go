package jsworker

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// appLoad is what the worker found in the custom routes' app.
type appLoad struct {
	Routes []Route `json:"routes"`
}

// Route is one route the Hono app registered (app.routes): its method
// ("GET", …, or "ALL" for app.all and middleware) and path pattern as
// written ("/users/:id", "/files/*").
type Route struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// HasApp reports whether the workers loaded a custom routes' app.
func (p *Pool) HasApp() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.info.HTTP != nil
}

// Routes lists the routes of the custom routes' app.
func (p *Pool) Routes() []Route {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.info.HTTP == nil {
		return nil
	}
	return p.info.HTTP.Routes
}

// ErrAppFailed is the error of a custom-route request whose worker failed
// before the app answered (502).
var ErrAppFailed = errors.New("the custom routes' app did not answer")

// ServeApp serves r with the custom routes' Hono app in a worker, writing
// its response to rw as the app produces it (a streamed body is flushed
// chunk by chunk). user is the caller as runs see it
// (langgraph_auth_user; nil: none), which the app reads as
// c.env.langgraph_auth_user. It returns an error, and writes nothing,
// only when the app could not answer at all.
func (p *Pool) ServeApp(rw http.ResponseWriter, r *http.Request, user map[string]any) error {
	ctx := r.Context()
	var body []byte
	if r.Body != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return fmt.Errorf("read request body: %w", err)
		}
	}
	w, err := p.pick(ctx)
	if err != nil {
		return err
	}
	id := "h" + strconv.FormatInt(p.streamSeq.Add(1), 10)
	st := &appStream{ready: make(chan struct{}, 1)}
	p.streams.Store(id, st)
	defer p.streams.Delete(id)
	params := map[string]any{"stream_id": id, "method": r.Method, "url": requestURL(r), "headers": headerPairs(r.Header), "user": user}
	if len(body) > 0 {
		params["body"] = base64.StdEncoding.EncodeToString(body)
	}
	done := w.c.start("http", params, nil)
	wrote := false
	for {
		select {
		case <-st.ready:
			if err := st.flush(rw, &wrote); err != nil {
				_ = w.c.notify("http.cancel", map[string]string{"stream_id": id})
				return nil // the client went away; nothing more to say
			}
		case err := <-done:
			// Every part the worker sent came before its answer.
			if ferr := st.flush(rw, &wrote); ferr != nil {
				return nil
			}
			if err != nil && !wrote {
				return fmt.Errorf("%w: %v", ErrAppFailed, err)
			}
			if !wrote {
				rw.WriteHeader(http.StatusNoContent)
			}
			return nil
		case <-ctx.Done():
			_ = w.c.notify("http.cancel", map[string]string{"stream_id": id})
			<-done
			return nil
		}
	}
}

// appStream queues the parts of one response as the connection's reader
// hands them over, so that a slow client never holds up the reader.
type appStream struct {
	mu    sync.Mutex
	parts []appPart
	ready chan struct{}
}

// appPart is an http.head or http.body notification.
type appPart struct {
	Status  int         `json:"status"`
	Headers [][2]string `json:"headers"`
	Data    []byte      `json:"data"` // base64 on the wire
	head    bool
}

// httpPart queues a part for its request (gone: dropped).
func (p *Pool) httpPart(method string, raw json.RawMessage) {
	var part struct {
		StreamID string `json:"stream_id"`
		appPart
	}
	if err := json.Unmarshal(raw, &part); err != nil {
		return
	}
	v, ok := p.streams.Load(part.StreamID)
	if !ok {
		return
	}
	st := v.(*appStream)
	part.head = method == "http.head"
	st.mu.Lock()
	st.parts = append(st.parts, part.appPart)
	st.mu.Unlock()
	select {
	case st.ready <- struct{}{}:
	default:
	}
}

// hopHeaders describe the worker's hop, not the response.
var hopHeaders = map[string]bool{"Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Keep-Alive": true}

// flush writes the queued parts to rw.
func (st *appStream) flush(rw http.ResponseWriter, wrote *bool) error {
	st.mu.Lock()
	parts := st.parts
	st.parts = nil
	st.mu.Unlock()
	for _, part := range parts {
		if part.head {
			// The app's headers replace the server's (CORS) of the same
			// name; a repeated one (Set-Cookie) is kept as often as sent.
			h := rw.Header()
			seen := map[string]bool{}
			for _, kv := range part.Headers {
				k := http.CanonicalHeaderKey(kv[0])
				switch {
				case hopHeaders[k]:
				case seen[k]:
					h.Add(k, kv[1])
				default:
					h.Set(k, kv[1])
					seen[k] = true
				}
			}
			rw.WriteHeader(part.Status)
			*wrote = true
			continue
		}
		if _, err := rw.Write(part.Data); err != nil {
			return err
		}
	}
	if f, ok := rw.(http.Flusher); ok && len(parts) > 0 {
		f.Flush()
	}
	return nil
}
