// Package lifecycle is the one start/stop shape of the server's background
// services and the one path that releases them.
//
// Every background service (a loop, a worker pool, a listener) is a
// Service: Start begins its work and returns once it has begun, Stop ends
// it and returns once it has ended. A Service that also takes work from
// others (the run engine, the HTTP server) may implement Drainer: Drain
// stops it taking new work and hands back what it holds, before anything
// is stopped.
//
// A Group owns the services and the resources of one server, in the order
// they were added:
//
//   - Opened adds a resource that is already open (a database, a bound
//     listener, a pool of processes); its Stop releases it. A constructor
//     adds each resource as soon as it has it, and on an error stops the
//     group: the resources opened so far are released in reverse order, on
//     one path, instead of a release at every return.
//   - Start starts services in order. When one fails, the group is
//     stopped at once: the one that failed is stopped too (Stop must
//     release whatever a failed Start got to), then every service and
//     resource added before it, in reverse order.
//   - Stop stops everything in two passes over the entries in reverse
//     order: first Drain on those that implement it, then Stop on all of
//     them. So a service started before another is stopped after it, and
//     one that takes work stops taking it before anything it depends on
//     stops. Stop runs once; later calls return the first result. It goes
//     on past an error and returns them all joined.
//
// Entries that were never started (Start not reached) are not stopped.
// The group does not wrap errors: each service says what failed in its own
// words.
package lifecycle
