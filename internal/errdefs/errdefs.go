// Package errdefs defines the domain error kinds shared by every service.
// Services wrap them with %w and lower-case context; the HTTP layer maps each
// kind to a status code in one table, so no other package picks statuses.
package errdefs

import "errors"

var (
	// ErrNotFound: the named resource does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request conflicts with existing state, e.g. an id that
	// is taken or a thread that is busy (409).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request is well-formed but its content is unacceptable (422).
	ErrInvalid = errors.New("invalid request")
	// ErrUnauthorized: missing or wrong credentials (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the caller is known but may not do this (403).
	ErrForbidden = errors.New("forbidden")
	// ErrTooLarge: the request, or one of its fields, is larger than the
	// server accepts (413).
	ErrTooLarge = errors.New("too large")
	// ErrNoSpace: the disk holding the database is full; nothing was
	// written (507).
	ErrNoSpace = errors.New("insufficient storage")
	// ErrLimit: a configured quota is used up, e.g. the number of crons (429).
	ErrLimit = errors.New("limit reached")
)
