// Package httpapi is the HTTP edge: the generated strict handlers of
// api/openapi.yaml implemented over the services, the one error table
// (errors.go), and the middleware every request passes, in this order:
// CORS, authentication (auth.go: the API key or a bearer token makes the
// request's caller, and the route table in routes.go says who may call each
// route), lenient body decoding, body limits, OpenAPI validation.
//
// # Invariants
//
//   - Every OPTIONS request is answered by the CORS middleware as a
//     preflight (204, CORS headers, no body), before the API key is
//     checked: no route ever sees OPTIONS, so none answers a resource
//     through it.
//   - Every error leaves as ErrorBody {detail, message, code}; statuses are
//     chosen only in errors.go, from the errdefs kind of the error. Requests
//     net/http refuses before any handler runs get the same body through
//     JSONFramingErrors.
//   - A request body is read whole, within Limits (size, stall and total
//     time), before anything decodes it. A JSON body nests at most
//     MaxJSONDepth levels and has nothing after its value, so that whatever
//     is stored can be decoded again (the decoder stops at 10,000 levels,
//     and records wrap what a client sent in a few more).
//   - Every served route has an entry in the route table (public,
//     operator-only, or a resource and action); the services then
//     authorise the action on the object named (internal/authz), so an
//     object another user owns answers 404 like a missing one.
//   - A request refused before its body was read whole (413, 408, a broken
//     body) gets its answer, then its connection closes: nothing more is
//     read of a stalled or broken body, and the rest of a body over the
//     size limit is read and discarded (bounded) first, so that a client
//     that sends its whole body before reading gets the answer.
//   - Bodies of LargeBodyBytes or more are checked and decoded (body
//     checks, request validation, the generated handler's decoding) at most
//     GOMAXPROCS-1 at a time (at least one), so that a processor is left to
//     the small requests; the handler's own work runs outside that bound.
//   - A large body is scanned, not decoded, where its content does not
//     matter: the validator checks a copy in which each top-level field
//     whose schema accepts any object has that object replaced by {}
//     (opaque.go: the same verdict, without decoding megabytes into maps),
//     and a request type that decodes itself (api.StorePutRequest) gets
//     the body the edge found valid without a second scan. A store value
//     is then stored as it was sent.
//   - A refused request changes nothing: every check runs before the
//     service call that writes.
package httpapi
