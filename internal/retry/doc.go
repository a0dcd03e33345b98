// Package retry is the one backoff policy of the server's retrying
// callers: the async tasks' HTTP and A2A transports, the model client,
// webhook deliveries and the event broker's writes. Each caller keeps its
// own loop (what is worth retrying and how often is its business) and asks
// a Policy how long to wait, reads a server's Retry-After with After, and
// waits with Wait.
//
// Invariants:
//   - Policy.Delay is Base·Factor^attempt, capped at Max, less a random
//     part of at most Jitter of it; a positive server hint replaces it,
//     capped at MaxAfter. It never overflows and is never negative.
//   - After reads both forms of RFC 9110's Retry-After (delay-seconds, here
//     also fractional, and an HTTP-date); anything it cannot read, and a
//     date already past, is 0: no hint.
//   - Wait returns as soon as its context ends, with the context's cause.
package retry
