// Package console serves the web console: a single-page application for
// understanding and steering agents from a browser (threads with titles,
// search and their subagent threads; their state, history, edited
// checkpoints and forks; runs with their timeline of steps, model and tool
// calls, tokens, graph and live stream; answering interrupts; the run
// queue, crons, and the task tree of a supervisor thread). See
// docs/console.md.
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
//   - What the console shows of a run is read from what the server
//     stores (the run record and the run's checkpoints in the thread's
//     history), never only from the run's events, so a finished run and
//     one from before a restart show the same.
//   - /ui redirects to /ui/, so relative asset paths resolve under the
//     prefix. A path under /ui/ that names no asset and has no file
//     extension is a page of the application and answers index.html (SPA
//     fallback); one with an extension that names no asset is 404.
package console
