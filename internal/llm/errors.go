package llm

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

var (
	// ErrInvalidMessage reports a message that cannot be sent to the
	// provider (unknown type, tool message without tool_call_id, ...). No
	// request was made.
	ErrInvalidMessage = errors.New("invalid message")
	// ErrTimeout reports that an attempt ran longer than Config.Timeout.
	ErrTimeout = errors.New("model call timed out")
	// ErrConnection reports a transport failure: refused or reset
	// connection, or a stream cut short.
	ErrConnection = errors.New("model connection failed")
	// ErrStreamInterrupted reports a failure after chunks were already
	// delivered to the ChunkFunc; the call is not retried (that would
	// duplicate streamed output) and the streamed message is incomplete.
	ErrStreamInterrupted = errors.New("model stream interrupted")
)

// StatusError is an HTTP error status answered by the provider.
type StatusError struct {
	StatusCode int
	// Message is the provider's error message (or a prefix of the body).
	Message string
	// RetryAfter is the server's retry hint, 0 when none was sent.
	RetryAfter time.Duration
	// Err is the client library's error.
	Err error
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("provider answered %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Message)
}

// Unwrap returns the client library's error.
func (e *StatusError) Unwrap() error { return e.Err }

// Retryable reports whether the status is worth retrying: 429 and 5xx.
func (e *StatusError) Retryable() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}
