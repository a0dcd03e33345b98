package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"agentserver/api"
	"agentserver/internal/errdefs"
)

// Limits bound what one request may carry. Zero fields take the defaults
// below.
type Limits struct {
	// MaxBodyBytes bounds a request body; a larger one is answered 413.
	MaxBodyBytes int64
	// BodyStallTimeout bounds how long a request body may send nothing; a
	// client that stalls longer is cut off.
	BodyStallTimeout time.Duration
	// BodyReadTimeout bounds how long reading a whole request body may
	// take, however steadily it trickles in.
	BodyReadTimeout time.Duration
}

const (
	// DefaultMaxBodyBytes is the default of Limits.MaxBodyBytes (10 MiB).
	DefaultMaxBodyBytes = 10 << 20
	// DefaultBodyStallTimeout is the default of Limits.BodyStallTimeout.
	DefaultBodyStallTimeout = 10 * time.Second
	// DefaultBodyReadTimeout is the default of Limits.BodyReadTimeout.
	DefaultBodyReadTimeout = 2 * time.Minute
	// MaxJSONDepth is how deeply arrays and objects may nest in a request
	// body. Stored records wrap what a client sent in a few more levels, so
	// the cap sits far below the JSON decoder's own limit (10,000): whatever
	// is accepted can always be read back.
	MaxJSONDepth = 100
	// MaxMetadataBytes bounds the encoded size of a body's metadata field.
	MaxMetadataBytes = 64 << 10
	// MaxMetadataKeys bounds the number of keys of a body's metadata field:
	// each top-level key of a thread's metadata is a secondary-index entry.
	MaxMetadataKeys = 256
	// LargeBodyBytes is the size from which a request body is large: large
	// bodies are checked and decoded by the edge at most GOMAXPROCS-1 at a
	// time (at least one), so that decoding them leaves a processor to the
	// small requests.
	LargeBodyBytes = 1 << 20
)

func (l Limits) withDefaults() Limits {
	l.MaxBodyBytes = positiveOr(l.MaxBodyBytes, DefaultMaxBodyBytes)
	l.BodyStallTimeout = positiveOr(l.BodyStallTimeout, DefaultBodyStallTimeout)
	l.BodyReadTimeout = positiveOr(l.BodyReadTimeout, DefaultBodyReadTimeout)
	return l
}

// positiveOr returns v when it is positive, def otherwise.
func positiveOr[T int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// bodyGuard reads a request body whole, within the size limit and the read
// timeout, and checks a JSON body before anything decodes it: its nesting
// depth, that nothing follows the JSON value, and the size of its metadata.
// The body is then handed on from memory.
func bodyGuard(l Limits) echo.MiddlewareFunc {
	l = l.withDefaults()
	large := newSlots(max(1, runtime.GOMAXPROCS(0)-1))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.Body == nil || r.Body == http.NoBody {
				return next(c)
			}
			if r.ContentLength > l.MaxBodyBytes {
				return answerUnread(c, bodyTooLarge(l.MaxBodyBytes))
			}
			body, err := readBody(c, l)
			if err != nil {
				return answerUnread(c, err)
			}
			if len(body) >= LargeBodyBytes {
				release, err := large.acquire(r.Context())
				if err != nil {
					return err
				}
				release = sync.OnceFunc(release)
				defer release()
				c.Set(largeSlotKey, release)
			}
			if isJSON(r.Header.Get("Content-Type")) {
				valid, err := checkJSONBody(body)
				if err != nil {
					return err
				}
				if valid && len(body) >= LargeBodyBytes {
					c.Set(largeBodyKey, body)
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			return next(c)
		}
	}
}

// largeSlotKey holds, in the echo context of a request with a large body,
// the function that gives its slot back.
const largeSlotKey = "httpapi.largeSlot"

// largeBodyKey holds, in the echo context of a request with a large body,
// the body as bodyGuard read it (the request validator checks a lighter
// copy of it, validate.go).
const largeBodyKey = "httpapi.largeBody"

// releaseAfterDecode is the generated handlers' middleware that gives back
// a large body's slot: it runs once the body is decoded into the
// operation's request object. The slot bounds the work a large body costs
// before its handler runs, not the handler, which may wait for a run for
// minutes. (A request no route of the contract serves gets its slot back
// from the request validator.)
func releaseAfterDecode(f api.StrictHandlerFunc, _ string) api.StrictHandlerFunc {
	return func(c echo.Context, req any) (any, error) {
		releaseSlot(c)
		return f(c, req)
	}
}

// releaseSlot gives back the slot of c's large body, if it holds one.
func releaseSlot(c echo.Context) {
	if release, ok := c.Get(largeSlotKey).(func()); ok {
		release()
	}
}

// slots is a counting semaphore.
type slots chan struct{}

func newSlots(n int) slots { return make(slots, n) }

// acquire takes a slot, or gives up when ctx ends; release returns it.
func (s slots) acquire(ctx context.Context) (release func(), err error) {
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readBody reads the body of c's request under l. The read deadlines it
// sets are cleared afterwards, so that a long-lived response (a stream) is
// not cut by them.
func readBody(c echo.Context, l Limits) ([]byte, error) {
	r := c.Request()
	body := http.MaxBytesReader(c.Response().Writer, r.Body, l.MaxBodyBytes)
	rc := http.NewResponseController(c.Response().Writer)
	if rc.SetReadDeadline(time.Now().Add(l.BodyStallTimeout)) == nil {
		defer rc.SetReadDeadline(time.Time{})
		body = &deadlineReader{r: body, rc: rc, stall: l.BodyStallTimeout, end: time.Now().Add(l.BodyReadTimeout)}
	}
	// A declared length (within the limit, checked before) sizes the
	// buffer at once instead of growing it by copies.
	buf := bytes.NewBuffer(make([]byte, 0, max(r.ContentLength, 0)+1))
	_, err := buf.ReadFrom(body)
	data := buf.Bytes()
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooLarge):
		return nil, bodyTooLarge(l.MaxBodyBytes)
	case errors.As(err, &netErr) && netErr.Timeout():
		return nil, echo.NewHTTPError(http.StatusRequestTimeout, fmt.Sprintf("the request body stalled for %s or took longer than %s", l.BodyStallTimeout, l.BodyReadTimeout))
	case err != nil:
		// What is left of the body must not be read as the next request,
		// nor waited for (answerUnread).
		return nil, invalidf("could not read the request body: " + err.Error())
	}
	return data, nil
}

// After a request is refused with part of its body unread, the server
// reads and discards at most drainBytes more of it, for at most
// drainTime, before it closes the connection: a client that sends its
// whole body before reading the answer (most do) then gets the answer
// instead of a reset connection.
const (
	drainBytes = 64 << 20
	drainTime  = 10 * time.Second
)

// answerUnread writes the answer to a request refused before its body was
// read whole, then ends what is left of the body so that the connection
// closes right after the answer: the rest of a body over the size limit is
// drained (drainBytes, drainTime), unless the client waits for a 100
// Continue it will not get; nothing more is read of a body that stalled or
// broke. The connection does not stay open waiting for the rest.
func answerUnread(c echo.Context, err error) error {
	c.Response().Header().Set("Connection", "close")
	c.Error(err)
	c.Response().Flush()
	r := c.Request()
	rc := http.NewResponseController(c.Response().Writer)
	if errors.Is(err, errdefs.ErrTooLarge) && !strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		if rc.SetReadDeadline(time.Now().Add(drainTime)) == nil {
			_, _ = io.CopyN(io.Discard, r.Body, drainBytes)
		}
	}
	// Whatever net/http would still read of the body fails at once.
	_ = rc.SetReadDeadline(time.Now())
	return nil
}

// deadlineReader moves the connection's read deadline before each read:
// stall from now, but never past end.
type deadlineReader struct {
	r     io.ReadCloser
	rc    *http.ResponseController
	stall time.Duration
	end   time.Time
}

func (d *deadlineReader) Read(p []byte) (int, error) {
	next := time.Now().Add(d.stall)
	if next.After(d.end) {
		next = d.end
	}
	_ = d.rc.SetReadDeadline(next)
	return d.r.Read(p)
}

func (d *deadlineReader) Close() error { return d.r.Close() }

func bodyTooLarge(limit int64) error {
	return tooLargef("request body is larger than the limit of %d bytes", limit)
}

func isJSON(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/json"
}

// checkJSONBody rejects a body nested deeper than MaxJSONDepth, a body with
// data after its JSON value, and a metadata field over its limits, and
// reports whether the body is valid JSON. A body that is not JSON at all
// is left for the request validator to report.
func checkJSONBody(body []byte) (valid bool, err error) {
	if jsonDepth(body) > MaxJSONDepth {
		return false, invalidf(fmt.Sprintf("request body nests arrays and objects more than %d levels deep", MaxJSONDepth))
	}
	if !json.Valid(body) {
		if hasTrailingData(body) {
			return false, invalidf("request body has data after its JSON value")
		}
		return false, nil
	}
	return true, checkMetadataField(body)
}

// jsonDepth returns the deepest nesting of arrays and objects in data,
// counting brackets outside strings. It does not check that data is JSON.
func jsonDepth(data []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString && b == '"':
			inString = false
		case inString:
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			depth++
			deepest = max(deepest, depth)
		case b == '}' || b == ']':
			depth--
		}
	}
	return deepest
}

// hasTrailingData reports whether data starts with a complete JSON value
// that is followed by more than white space.
func hasTrailingData(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	var first json.RawMessage
	if err := dec.Decode(&first); err != nil {
		return false
	}
	rest := data[dec.InputOffset():]
	return len(bytes.TrimSpace(rest)) > 0
}

// checkMetadataField applies MaxMetadataBytes and MaxMetadataKeys to the
// metadata field of a JSON object body (every route that stores metadata
// takes it under that name), or to each element of a list body (a batch).
func checkMetadataField(body []byte) error {
	if !bytes.Contains(body, []byte(`"metadata"`)) {
		return nil
	}
	type withMetadata struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	var items []withMetadata
	var one withMetadata
	if json.Unmarshal(body, &one) == nil {
		items = []withMetadata{one}
	} else if json.Unmarshal(body, &items) != nil {
		return nil // neither an object nor a list of them: the validator reports it
	}
	for _, it := range items {
		if err := checkMetadata(it.Metadata); err != nil {
			return err
		}
	}
	return nil
}

// checkMetadata applies the metadata limits to one encoded metadata value.
func checkMetadata(raw json.RawMessage) error {
	if len(raw) > MaxMetadataBytes {
		return tooLargef("metadata is larger than the limit of %d bytes", MaxMetadataBytes)
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) == nil && len(keys) > MaxMetadataKeys {
		return tooLargef("metadata has %d keys, more than the limit of %d", len(keys), MaxMetadataKeys)
	}
	return nil
}
