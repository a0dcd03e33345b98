// Package console serves the web console: a single-page application for
// operating the server from a browser (threads, their state, history and
// checkpoints, runs with live streams, the run queue, crons, and the task
// tree of a supervisor thread). See docs/console.md.
//
// Invariants:
//
//   - The console's files live in assets/ as plain ES modules, CSS and
//     HTML; they are the sources and are embedded as they are, so there is
//     no build step and nothing generated to keep in step.
//   - Every asset is served from the binary and names no other origin: the
//     pages work offline, and the Content-Security-Policy sent with them
//     allows this origin only.
//   - The assets hold no data, so they are public (GET and HEAD under /ui
//     need no API key). Everything the console shows it reads through the
//     public HTTP API, sending the key the user typed as x-api-key, like
//     any other client.
//   - /ui redirects to /ui/, so relative asset paths resolve under the
//     prefix. A path under /ui/ that names no asset and has no file
//     extension is a page of the application and answers index.html (SPA
//     fallback); one with an extension that names no asset is 404.
package console
