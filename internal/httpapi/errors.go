package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"

	"agentserver/internal/errdefs"
)

// ErrorBody is the JSON body of every error response. detail is what the
// Python server and SDKs read; message and code follow the Agent Protocol.
type ErrorBody struct {
	Detail  string `json:"detail"`
	Message string `json:"message"`
	Code    string `json:"code"`
}

// errorKinds is the one table that turns domain errors into statuses.
var errorKinds = []struct {
	err    error
	status int
	code   string
}{
	{errdefs.ErrNotFound, http.StatusNotFound, "not_found"},
	{errdefs.ErrConflict, http.StatusConflict, "conflict"},
	{errdefs.ErrInvalid, http.StatusUnprocessableEntity, "invalid_request"},
	{errdefs.ErrUnauthorized, http.StatusUnauthorized, "unauthorized"},
	{errdefs.ErrForbidden, http.StatusForbidden, "forbidden"},
	{errdefs.ErrTooLarge, http.StatusRequestEntityTooLarge, "payload_too_large"},
	{errdefs.ErrNoSpace, http.StatusInsufficientStorage, "insufficient_storage"},
	{errdefs.ErrLimit, http.StatusTooManyRequests, "too_many_requests"},
	{context.Canceled, 499, "client_closed_request"},
}

// codeForStatus names statuses raised by echo itself (routing, binding).
var codeForStatus = map[int]string{
	http.StatusBadRequest:                  "bad_request",
	http.StatusUnauthorized:                "unauthorized",
	http.StatusForbidden:                   "forbidden",
	http.StatusNotFound:                    "not_found",
	http.StatusMethodNotAllowed:            "method_not_allowed",
	http.StatusRequestTimeout:              "request_timeout",
	http.StatusConflict:                    "conflict",
	http.StatusRequestEntityTooLarge:       "payload_too_large",
	http.StatusUnsupportedMediaType:        "unsupported_media_type",
	http.StatusUnprocessableEntity:         "invalid_request",
	http.StatusRequestHeaderFieldsTooLarge: "headers_too_large",
	http.StatusInternalServerError:         "internal_error",
	http.StatusServiceUnavailable:          "unavailable",
}

// classify returns the status, code and client-facing message of err.
func classify(err error) (int, string, string) {
	for _, k := range errorKinds {
		if errors.Is(err, k.err) {
			return k.status, k.code, err.Error()
		}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if s, ok := he.Message.(string); ok && s != "" {
			msg = s
		} else if e, ok := he.Message.(error); ok {
			msg = e.Error()
		}
		if he.Internal != nil && he.Code < 500 {
			msg = msg + ": " + he.Internal.Error()
		}
		code, ok := codeForStatus[he.Code]
		if !ok {
			code = "error"
		}
		return he.Code, code, msg
	}
	return http.StatusInternalServerError, "internal_error", "internal server error"
}

// errorHandler is echo's HTTPErrorHandler: every error leaves as ErrorBody.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		status, code, msg := classify(err)
		if status >= 500 {
			log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		}
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(status)
			return
		}
		_ = c.JSON(status, ErrorBody{Detail: msg, Message: msg, Code: code})
	}
}

// invalidf builds a 422 error for a request the handler rejects itself.
func invalidf(msg string) error {
	return &kindError{msg: msg, kind: errdefs.ErrInvalid}
}

// tooLargef builds a 413 error naming the limit that was exceeded.
func tooLargef(format string, args ...any) error {
	return &kindError{msg: fmt.Sprintf(format, args...), kind: errdefs.ErrTooLarge}
}

// kindError is a client-facing message of one errdefs kind.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.kind }
