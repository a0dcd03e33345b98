package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
)

// plainErrorHeaders is how net/http ends the header block of the error
// answers it writes itself, before any handler runs (a header block over
// the limit, a malformed request line, an unsupported transfer encoding).
// Responses of handlers are written with their headers in sorted order and
// a Date, so they never contain it.
const plainErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// JSONFramingErrors wraps ln so that the plain-text error answers net/http
// writes for requests it cannot parse leave as the JSON error body every
// other error has. net/http writes each such answer with a single Write on
// the connection and closes it afterwards, which is what makes the rewrite
// safe.
func JSONFramingErrors(ln net.Listener) net.Listener {
	return framingListener{ln}
}

type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framingConn{Conn: c}, nil
}

// framingConn rewrites net/http's own error answers; everything else passes
// through unchanged.
type framingConn struct{ net.Conn }

func (c *framingConn) Write(p []byte) (int, error) {
	status, msg, ok := parsePlainError(p)
	if !ok {
		return c.Conn.Write(p)
	}
	status, code := framingErrorCode(status)
	if _, err := c.Conn.Write(jsonErrorResponse(status, code, msg)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// CloseWrite lets net/http half-close the connection after an error, as it
// does with a bare TCP connection.
func (c *framingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps the TCP connection's sendfile path.
func (c *framingConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(c.Conn, r)
}

// parsePlainError recognises an error answer written by net/http itself
// and returns its status and text.
func parsePlainError(p []byte) (int, string, bool) {
	rest, ok := bytes.CutPrefix(p, []byte("HTTP/1.1 "))
	if !ok || len(rest) < 4 || rest[3] != ' ' {
		return 0, "", false
	}
	status, err := strconv.Atoi(string(rest[:3]))
	if err != nil || status < 400 || status > 599 {
		return 0, "", false
	}
	_, body, found := bytes.Cut(rest, []byte(plainErrorHeaders))
	if !found {
		return 0, "", false
	}
	return status, string(body), true
}

// framingRewrites are answers net/http writes itself that leave with
// another status and code. It answers a Transfer-Encoding it does not know
// with 501; that is the client's input to fix, so it leaves as a 400
// naming the cause, as bad input does everywhere else.
var framingRewrites = map[int]struct {
	status int
	code   string
}{
	501: {http.StatusBadRequest, "unsupported_transfer_encoding"},
}

// framingErrorCode maps the status of an answer net/http wrote itself to
// the status and code the client gets.
func framingErrorCode(status int) (int, string) {
	if r, ok := framingRewrites[status]; ok {
		return r.status, r.code
	}
	if code, ok := codeForStatus[status]; ok {
		return status, code
	}
	return status, "error"
}

// jsonErrorResponse is a complete HTTP response carrying ErrorBody.
func jsonErrorResponse(status int, code, msg string) []byte {
	body, _ := json.Marshal(ErrorBody{Detail: msg, Message: msg, Code: code})
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}
