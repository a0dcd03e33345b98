// Package assistants manages assistants (a served graph plus a configuration)
// and their versions, and presents them as Agent Protocol agents.
//
// Every endpoint that names an assistant accepts either its UUID or the id of
// a served graph; Service.Resolve maps a graph id to that graph's system
// assistant.
//
// Invariants:
//   - Each served graph has a system assistant whose id is
//     uuid5(6ba7b821-9dad-11d1-80b4-00c04fd430c8, graph_id) (SystemID), named
//     after the graph, with metadata {"created_by": "system"}. It is created
//     at start (EnsureSystemAssistants) when missing and never overwritten, so
//     client edits survive restarts and a deleted one comes back at the next
//     start.
//   - Versions are numbered from 1 and are immutable once written: Patch
//     writes version max+1, it never rewrites an existing one.
//   - The current record always has the content (graph_id, config, context,
//     metadata, version, name, description) of one stored version; only its
//     timestamps differ (created_at is the assistant's creation, updated_at
//     the last change of which version is current).
//   - An assistant's graph_id names a served graph when it is written; graph
//     and schema reads report not found if the graph has since been removed
//     from langgraph.json.
//   - Each operation is one storage transaction: a failed write changes
//     nothing.
package assistants
