// Package jsworker hosts the LangGraph.js graphs of a langgraph.json in
// Node graph workers that the server starts, supervises and stops itself,
// and runs them for the run engine (a graph.Runner per graph).
//
// The worker's code (node/worker.mjs, with node/tsschema.mjs, which derives
// the schemas of TypeScript Annotation graphs from their types) is
// embedded in the binary and written to a cache folder at start; it has no
// dependencies of its own and imports @langchain/langgraph (and tsx or
// typescript for .ts graphs) from the user's project. Server and worker talk over a Unix socket pair
// handed to the worker as its fd 3, one JSON message per line in each
// direction (docs/js-graphs.md, "Worker protocol"); the worker's stdout
// and stderr go to the server's log.
//
// # Invariants
//
//   - A graph's schemas are derived once per worker, at load (from its zod
//     or StateSchema definitions, else from its TypeScript types), never
//     per run; a graph whose schemas cannot be derived keeps the ones its
//     state channels give, and the worker logs why.
//   - Checkpoints, pending writes and store items of JavaScript graphs
//     live in the server's storage only: the worker's checkpointer and
//     store call back for every read and write, and a worker keeps no
//     state of a run beyond the run.
//   - A stored checkpoint of a JavaScript graph keeps the saver's own
//     serialized checkpoint, metadata and pending writes in Native
//     (version nativeVersion) beside the projection the API reads
//     (values with messages as dicts, metadata, next, tasks).
//   - Checkpoint ids are LangGraph.js's own (uuid6: time first, so byte
//     order is creation order, as for the ids the server mints with
//     graph.NewCheckpointID); a thread's newest checkpoint is its last
//     key whoever wrote it.
//   - A reload (Reload, Watch) swaps the whole set of workers at once,
//     and only after every new one loaded the project without error; a
//     retired worker takes no new run and stops when its last run ends.
//   - Checkpoints of every namespace (the graph's own and its subgraphs')
//     go to the run's sink once their put and their snapshot arrived and
//     the connection's reader has handled all the worker sent; those of a
//     run whose newest checkpoint has nothing next (done: its answer
//     follows) go with the run's end (graph.EndWriter), in its last commit.
//     Storage keeps nested ones apart from the thread's own.
//   - A client's state update of a JS thread is applied by the graph in a
//     worker (update_state, graph.StateUpdater), in a session of its own
//     whose checkpoints name no run; the caller stores them.
//   - The worker's calls for a run are answered only while the run's
//     session is open: once Run returns, they fail, so nothing a run does
//     afterwards reaches its sink.
//   - Calls that change a run's state (put, putWrites, snapshot, event)
//     are notifications, handled in the order the worker sent them, on the
//     connection's reader; a put or putWrites the session refuses fails
//     the run. Reads of storage and store calls are requests and run on
//     goroutines of their own.
//   - A worker that exits or stops answering pings is replaced; its
//     in-flight runs fail with an error wrapping graph.ErrExecutorLost,
//     which the run engine retries from their last checkpoint. Before a
//     run returns, whatever ended it, every root checkpoint whose pending
//     writes arrived after it was handed to the sink is handed again, so
//     no write that arrived before the run's end is lost. Close stops every
//     worker; Pdeathsig (Linux) and the closed socket end a worker whose
//     server died.
//   - The project's Auth module (auth.path) and Hono app (http.app) load
//     in every worker beside the graphs; their calls (authenticate,
//     authorize, http) take no run slot, so a pool whose slots are all
//     busy still authenticates and serves custom routes. An
//     authorisation no on(...) handler covers makes no call at all.
//   - A custom route's response parts (http.head, http.body) are queued
//     by the connection's reader, never written by it, so a slow client
//     holds up no other call of its worker; every part precedes the
//     http call's answer.
package jsworker
