// A graph whose second node throws: the run ends in error with its message
// and the thread keeps the first node's checkpoint. A run whose config
// names configurable.stray_thread has its first node write a checkpoint of
// that thread through the run's checkpointer, which the server refuses:
// the run then fails with that refusal.
import { Annotation, StateGraph, emptyCheckpoint } from "@langchain/langgraph";

const State = Annotation.Root({ steps: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }) });

export const graph = new StateGraph(State)
  .addNode("first", async (_state, config) => {
    const stray = config.configurable?.stray_thread;
    if (stray) {
      const saver = config.configurable.__pregel_checkpointer;
      await saver.put({ configurable: { thread_id: stray, checkpoint_ns: "" } }, emptyCheckpoint(), { source: "loop", step: 0, parents: {} }, {});
    }
    return { steps: ["first"] };
  })
  .addNode("explode", () => {
    throw new TypeError("the explode node failed on purpose");
  })
  .addEdge("__start__", "first")
  .addEdge("first", "explode")
  .compile();
