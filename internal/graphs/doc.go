// Package graphs loads langgraph.json and describes the graphs it serves:
// their ids, JSON Schemas (input, output, state, config, context) and the
// node/edge drawing returned by GET /assistants/{id}/graph.
//
// langgraph.json keeps LangGraph's format. Each entry of "graphs" maps a
// graph id to a source; "builtin:NAME" names a graph compiled into the
// server. "env" names a .env file (relative to langgraph.json) whose
// variables are loaded into the process environment without overriding
// variables already set.
//
// Invariants: a Registry is immutable after Load; graph ids are unique and
// listed in sorted order.
package graphs
