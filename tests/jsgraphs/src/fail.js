// A graph whose second node throws: the run ends in error with its message
// and the thread keeps the first node's checkpoint.
import { Annotation, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ steps: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }) });

export const graph = new StateGraph(State)
  .addNode("first", () => ({ steps: ["first"] }))
  .addNode("explode", () => {
    throw new TypeError("the explode node failed on purpose");
  })
  .addEdge("__start__", "first")
  .addEdge("first", "explode")
  .compile();
