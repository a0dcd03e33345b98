// Package configfile reads the server's configuration documents
// (langgraph.json, agent spec files in YAML or JSON) strictly, and says what
// is wrong with one in a single line a person can act on.
//
// Invariants:
//   - A document is parsed into a tree of positioned values first, and
//     checked against the Go type it is decoded into before anything is
//     decoded: the first problem in document order is the error, so a
//     document either decodes whole or not at all.
//   - Every error is an *Error: the file, the line and column (1-based) of
//     the value or key at fault when there is one, and a message in the
//     file's terms (objects, arrays, strings, numbers; keys written as
//     paths like store.ttl.default_ttl), never in Go's.
//   - An unknown key is refused, naming the closest known key when one is
//     close, unless its object is listed in Options.Open.
//   - An empty document (no bytes, only white space and comments, a bare
//     document marker or null) is refused with ErrEmpty.
package configfile
