// Package jsonrpc holds what the server's JSON-RPC 2.0 endpoints (MCP at
// /mcp, A2A at /a2a/{assistant_id}) share: the error codes of the
// specification, the checks of a request's envelope, and the bounds on a
// batch and on an answer.
//
// # Invariants
//
//   - A batch holds at most MaxBatch calls; a longer one is refused whole,
//     before any call runs, with CodeInvalidRequest.
//   - An answer (a whole batch's included) is at most MaxAnswerBytes long;
//     a longer one is replaced by a CodeInternal error naming the bound, so
//     that a client never receives more than that from one request.
//   - Errors about the envelope itself (parse errors, invalid requests)
//     carry a null id, as the specification asks when the id could not be
//     read.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
)

// The error codes of JSON-RPC 2.0.
const (
	// CodeParse is for a body that is not JSON.
	CodeParse = -32700
	// CodeInvalidRequest is for JSON that is not a request object (an
	// array where batches are not served, a scalar, a bad id, jsonrpc or
	// method), or a batch over MaxBatch.
	CodeInvalidRequest = -32600
	// CodeMethodNotFound is for a method the endpoint does not serve.
	CodeMethodNotFound = -32601
	// CodeInvalidParams is for params a method cannot take.
	CodeInvalidParams = -32602
	// CodeInternal is for a failure of the server, and an answer over
	// MaxAnswerBytes.
	CodeInternal = -32603
)

const (
	// MaxBatch bounds the calls of one batch request.
	MaxBatch = 100
	// MaxAnswerBytes bounds the body of one answer.
	MaxAnswerBytes = 16 << 20
)

// Error is a JSON-RPC error object.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error is the error's message.
func (e *Error) Error() string { return e.Message }

// Errorf builds an Error.
func Errorf(code int, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ValidID reports whether raw, the id member of a request, is one the
// specification allows: a string, an integer or null. Objects, arrays,
// booleans and fractional numbers are not.
func ValidID(raw json.RawMessage) bool {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return false
	}
	switch id := v.(type) {
	case nil, string:
		return true
	case json.Number:
		_, err := id.Int64()
		return err == nil
	}
	return false
}

// BatchLen returns the number of elements of body when it is a JSON array
// (a batch), counting no further than MaxBatch+1, and false when it is
// not an array. It does not check the elements.
func BatchLen(body []byte) (int, bool) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return 0, true
	}
	n := 0
	for n <= MaxBatch && dec.More() {
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
		n++
	}
	return n, true
}

// CheckBatch refuses a batch of more than MaxBatch calls.
func CheckBatch(body []byte) *Error {
	if n, ok := BatchLen(body); ok && n > MaxBatch {
		return Errorf(CodeInvalidRequest, "a batch holds at most %d calls; send the calls in several requests", MaxBatch)
	}
	return nil
}

// Response encodes the answer to a request with id (nil: null): result, or
// err when it is set. An answer over MaxAnswerBytes becomes a CodeInternal
// error.
func Response(id json.RawMessage, result any, err *Error) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	body := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *Error          `json:"error,omitempty"`
	}{JSONRPC: "2.0", ID: id, Error: err}
	if err == nil {
		body.Result = result
	}
	raw, merr := json.Marshal(body)
	if merr != nil {
		return Response(id, nil, Errorf(CodeInternal, "encoding the answer: %v", merr))
	}
	if len(raw) > MaxAnswerBytes {
		return Response(id, nil, tooLarge(len(raw)))
	}
	return raw
}

func tooLarge(n int) *Error {
	return Errorf(CodeInternal, "the answer is %d bytes, more than the limit of %d: ask for less per request (fewer calls per batch, a smaller page)", n, MaxAnswerBytes)
}

// WriteError answers an HTTP request with a JSON-RPC error of null id.
func WriteError(w http.ResponseWriter, status int, err *Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(Response(nil, nil, err))
}

// BoundAnswers wraps w so that a JSON answer (Content-Type
// application/json) written in one piece over MaxAnswerBytes leaves as a
// CodeInternal error of null id instead. Streamed answers (server-sent
// events) pass through unchanged. The status is held back until the body
// starts, so that it can still change; End sends a status no body
// followed.
func BoundAnswers(w http.ResponseWriter) *BoundedWriter {
	return &BoundedWriter{ResponseWriter: w}
}

// BoundedWriter is the ResponseWriter BoundAnswers returns.
type BoundedWriter struct {
	http.ResponseWriter
	status  int
	started bool
}

// WriteHeader holds the status back until the body starts.
func (b *BoundedWriter) WriteHeader(status int) {
	if !b.started && b.status == 0 {
		b.status = status
	}
}

// Write writes p, or the error instead when p is a JSON answer over the
// bound.
func (b *BoundedWriter) Write(p []byte) (int, error) {
	if !b.started && len(p) > MaxAnswerBytes && isJSON(b.Header().Get("Content-Type")) {
		b.started = true
		b.Header().Del("Content-Length")
		b.ResponseWriter.WriteHeader(http.StatusOK)
		if _, err := b.ResponseWriter.Write(Response(nil, nil, tooLarge(len(p)))); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	b.start()
	return b.ResponseWriter.Write(p)
}

// Flush sends what was written so far.
func (b *BoundedWriter) Flush() {
	b.start()
	_ = http.NewResponseController(b.ResponseWriter).Flush()
}

// Unwrap gives http.ResponseController the writer underneath.
func (b *BoundedWriter) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// End sends a status held back with no body after it.
func (b *BoundedWriter) End() { b.start() }

func (b *BoundedWriter) start() {
	if b.started {
		return
	}
	b.started = true
	if b.status != 0 {
		b.ResponseWriter.WriteHeader(b.status)
	}
}

func isJSON(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "application/json"
}
