// A node that streams progress with the custom stream writer.
import { Annotation, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ count: Annotation() });

export const graph = new StateGraph(State)
  .addNode("work", async (state, config) => {
    const n = state.count ?? 3;
    for (let i = 1; i <= n; i++) config.writer?.({ progress: i, of: n });
    return { count: n };
  })
  .addEdge("__start__", "work")
  .compile();
