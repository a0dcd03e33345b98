// Package metrics holds the server's Prometheus collectors and the small
// helpers the rest of the code calls to record what happens: HTTP requests,
// the run queue and workers, run outcomes and durations, model and tool
// calls, async tasks, task-tool subagents, SSE clients and storage commits.
//
// Invariants:
//   - The collectors are process-wide and live in one registry (Registry),
//     which Handler serves in the Prometheus text format. Counters and
//     histograms only ever add; gauges that follow a count go up and down
//     in pairs (every Inc has exactly one Dec, usually deferred).
//   - State that the run engine already knows (pending and running runs,
//     worker slots) is not mirrored: each server registers a QueueSource
//     that is read at scrape time, and the gauges are the sum over the
//     servers of the process (one, outside tests).
//   - Recording never blocks and never fails: a hook is an atomic add or a
//     histogram observation, so the run hot path pays nanoseconds.
//   - Label values are bounded: route templates (never raw paths), model
//     and tool names from specs, statuses from fixed sets.
//
// Names follow LangGraph Platform's lg_api_* metrics where one exists (see
// docs/observability.md); the others are agentserver_*.
package metrics
