// Package scripted is an OpenAI-compatible chat completions server over real
// HTTP, for tests and developer tools only; production code never imports it.
//
// A Server listens on 127.0.0.1 and answers POST /v1/chat/completions with
// the next queued Step (see Server.Script), or, when the queue is empty, with
// its Responder (Echo by default). It speaks both the streaming dialect
// (stream: true; "data: {json}" server-sent events ending in "data: [DONE]",
// plus a usage chunk when stream_options.include_usage is set) and plain JSON.
// POST /v1/embeddings answers every input with Embed, a deterministic
// bag-of-words vector, so that similarity searches can be tested.
//
// Invariants:
//   - Steps are consumed in the order they were queued, one per request; a
//     request that fails to decode is answered 400 and consumes no step.
//   - Every request is recorded (raw body, decoded body, headers, arrival
//     time) before it is answered, so Requests reflects what clients sent even
//     when a step hangs.
//   - A disconnect is counted when the client goes away before the handler
//     has finished its response (while delaying, hanging or writing); server
//     shutdown and scripted aborts are not disconnects.
//   - Close stops every handler (hanging ones included) and waits for them and
//     for the accept loop; a Server owns no goroutine after Close returns.
package scripted
