// A graph of input.steps super-steps: "tick" counts and loops back to
// itself until it reaches steps. Used to measure the worker boundary's
// cost per super-step.
import { Annotation, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ steps: Annotation(), count: Annotation() });

export const graph = new StateGraph(State)
  .addNode("tick", (state) => ({ count: (state.count ?? 0) + 1 }))
  .addEdge("__start__", "tick")
  .addConditionalEdges("tick", (state) => (state.count < (state.steps ?? 1) ? "tick" : "__end__"))
  .compile();
