// Package graphs loads langgraph.json and describes the graphs it serves:
// their ids, JSON Schemas (input, output, state, config, context), the
// node/edge drawing returned by GET /assistants/{id}/graph, and what runs
// each of them (Definition.Runner). Executing a graph is package graph's
// job (no s).
//
// langgraph.json keeps LangGraph's format. Each entry of "graphs" maps a
// graph id to a source; "builtin:NAME" names a graph compiled into the
// server. "env" names a .env file (relative to langgraph.json) whose
// variables are loaded into the process environment without overriding
// variables already set.
//
// A Reloader recompiles the graphs that come from agent spec files when a
// file changes, replacing their definitions in the registry.
//
// Invariants: a Registry's graph ids are fixed by Load, unique and listed in
// sorted order; a Definition is never modified once it is in a registry (a
// reload installs a new one, so a run that holds the old one keeps it);
// built-in graphs are never replaced.
package graphs
