package jsworker

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// protocolVersion is the version of the worker protocol
// (docs/js-graphs.md, "Worker protocol") this server speaks; a worker that
// answers init with another is refused.
const protocolVersion = 2

// message is one line of the worker protocol: a request (ID and Method),
// a notification (Method without ID) or a response (ID with Result or
// Error). Each side numbers its own requests; a response never has a
// method, so ids of the two directions never meet.
type message struct {
	ID     int64           `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *WireError      `json:"error,omitempty"`
}

// WireError is an error as the protocol carries it: a JavaScript error's
// name and message, or the server's refusal of a call.
type WireError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	// State is the thread's state after a run failed (run errors only).
	State *runResult `json:"state,omitempty"`
	// Status is an HTTPException's status (auth and custom-route calls).
	Status int `json:"status,omitempty"`
}

// Error is the message alone: a failed run records the name apart.
func (e *WireError) Error() string { return e.Message }

// ErrorName is the error's name, which a failed run records.
func (e *WireError) ErrorName() string {
	if e.Name == "" {
		return "Error"
	}
	return e.Name
}

// errConnClosed fails the calls pending when the worker's connection ends,
// and wraps the error of a request that could not be written.
var errConnClosed = errors.New("graph worker connection closed")

// conn is one end of the protocol: newline-delimited JSON over a stream
// socket. Writes are serialized; reads happen in readLoop.
type conn struct {
	nc  net.Conn
	wmu sync.Mutex

	mu      sync.Mutex
	next    int64
	pending map[int64]chan message
	closed  bool
}

func newConn(nc net.Conn) *conn {
	return &conn{nc: nc, pending: map[int64]chan message{}}
}

// write sends one message.
func (c *conn) write(m message) error {
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Method, err)
	}
	raw = append(raw, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.nc.Write(raw)
	return err
}

// call sends a request and decodes its result into out (nil: ignored).
func (c *conn) call(ctx context.Context, method string, params, out any) error {
	req, err := c.send(method, params)
	if err != nil {
		return err
	}
	return req.wait(ctx, out)
}

// start sends a request now and waits for its answer in the background:
// the returned channel gets call's error. A message sent after start
// returns (a cancel notification) reaches the worker after the request.
func (c *conn) start(method string, params, out any) <-chan error {
	done := make(chan error, 1)
	req, err := c.send(method, params)
	if err != nil {
		done <- err
		return done
	}
	go func() { done <- req.wait(context.Background(), out) }()
	return done
}

// request is a request sent and not yet answered.
type request struct {
	c      *conn
	id     int64
	answer chan message
}

// send writes a request; wait reads its answer.
func (c *conn) send(method string, params any) (*request, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	req := &request{c: c, answer: make(chan message, 1)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errConnClosed
	}
	c.next++
	req.id = c.next
	c.pending[req.id] = req.answer
	c.mu.Unlock()
	if err := c.write(message{ID: req.id, Method: method, Params: raw}); err != nil {
		req.forget()
		return nil, fmt.Errorf("%w: %w", errConnClosed, err)
	}
	return req, nil
}

// forget stops routing the request's answer.
func (r *request) forget() {
	r.c.mu.Lock()
	delete(r.c.pending, r.id)
	r.c.mu.Unlock()
}

// wait decodes the request's result into out (nil: ignored).
func (r *request) wait(ctx context.Context, out any) error {
	defer r.forget()
	select {
	case m, ok := <-r.answer:
		if !ok {
			return errConnClosed
		}
		if m.Error != nil {
			return m.Error
		}
		if out != nil && len(m.Result) > 0 {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	return c.write(message{Method: method, Params: raw})
}

// reply answers a request of the other side with result or err.
func (c *conn) reply(id int64, result any, err error) {
	m := message{ID: id}
	if err != nil {
		var we *WireError
		if !errors.As(err, &we) {
			we = &WireError{Name: "ServerError", Message: err.Error()}
		}
		m.Error = we
	} else {
		raw, merr := json.Marshal(result)
		if merr != nil {
			m.Error = &WireError{Name: "ServerError", Message: merr.Error()}
		} else {
			m.Result = raw
		}
	}
	_ = c.write(m) // a worker that went away has no one to answer
}

// readLoop reads messages until the connection ends, passing requests and
// notifications to handle and responses to the calls waiting for them,
// and calls idle whenever it has handled every message read so far (before
// it waits for more). When it returns every pending call has failed with
// errConnClosed.
func (c *conn) readLoop(handle func(message), idle func()) error {
	defer c.close()
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 1 {
			var m message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				return fmt.Errorf("graph worker sent a malformed message: %w", jerr)
			}
			if m.Method == "" {
				c.resolve(m)
			} else {
				handle(m)
			}
		}
		if r.Buffered() == 0 {
			idle()
		}
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
	}
}

func (c *conn) resolve(m message) {
	c.mu.Lock()
	ch := c.pending[m.ID]
	delete(c.pending, m.ID)
	c.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// close ends the connection and fails the pending calls.
func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	c.nc.Close()
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
}
