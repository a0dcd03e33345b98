// Package httpapi is the HTTP edge: the generated strict handlers of
// api/openapi.yaml implemented over the services, the one error table
// (errors.go), and the middleware every request passes, in this order:
// CORS, authentication (auth.go: the API key or a bearer token makes the
// request's caller, and the route table in routes.go says who may call each
// route), lenient body decoding, body limits, OpenAPI validation.
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
//   - Every served route has an entry in the route table (public,
//     operator-only, or a resource and action); the services then
//     authorise the action on the object named (internal/authz), so an
//     object another user owns answers 404 like a missing one.
//   - A refused request changes nothing: every check runs before the
//     service call that writes.
package httpapi
