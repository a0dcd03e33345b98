// A graph for the crash rules: "quick" and "hang" run in the same
// super-step, then "join". Each node counts its executions in the store
// (namespace ["crash", thread_id]). On its first execution "hang" waits,
// after writing "ready" (once "quick" has finished), until the worker is
// killed (on its first configurable.hang_times executions, default 1); on
// the next it returns at once. A retry that keeps the pending
// write of "quick" runs "quick" once in all.
import { Annotation, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ quick_runs: Annotation(), hang_runs: Annotation(), done: Annotation() });

async function count(config, key) {
  const ns = ["crash", config.configurable.thread_id];
  const n = ((await config.store.get(ns, key))?.value?.n ?? 0) + 1;
  await config.store.put(ns, key, { n });
  return n;
}

function waitForAbort(signal) {
  return new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true }));
}

export const graph = new StateGraph(State)
  .addNode("quick", async (_state, config) => ({ quick_runs: await count(config, "quick") }))
  .addNode("hang", async (_state, config) => {
    const n = await count(config, "hang");
    if (n > (config.configurable.hang_times ?? 1)) return { hang_runs: n };
    const ns = ["crash", config.configurable.thread_id];
    // Store round trips (each a message to the server and its answer)
    // until "quick" has finished: its pending write, sent as it returned,
    // reached the server before the next message of this node.
    while ((await config.store.get(ns, "quick")) == null);
    for (let i = 0; i < 3; i++) await config.store.get(ns, "quick");
    await config.store.put(ns, "ready", { n });
    return waitForAbort(config.signal);
  })
  .addNode("join", () => ({ done: true }))
  .addEdge("__start__", "quick")
  .addEdge("__start__", "hang")
  .addEdge(["quick", "hang"], "join")
  .compile();
