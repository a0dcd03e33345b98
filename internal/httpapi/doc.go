// Package httpapi is the HTTP edge: the generated strict handlers of
// api/openapi.yaml implemented over the services, the one error table
// (errors.go), and the middleware every request passes, in this order:
// CORS, API-key auth, lenient body decoding, body limits, OpenAPI
// validation.
//
// # Invariants
//
//   - Every error leaves as ErrorBody {detail, message, code}; statuses are
//     chosen only in errors.go, from the errdefs kind of the error. Requests
//     net/http refuses before any handler runs get the same body through
//     JSONFramingErrors.
//   - A request body is read whole, within Limits (size, stall and total
//     time), before anything decodes it. A JSON body nests at most
//     MaxJSONDepth levels and has nothing after its value, so that whatever
//     is stored can be decoded again (the decoder stops at 10,000 levels,
//     and records wrap what a client sent in a few more).
//   - A refused request changes nothing: every check runs before the
//     service call that writes.
package httpapi
