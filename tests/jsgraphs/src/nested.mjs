// Nested subgraphs: "outer" runs "prepare", then the compiled subgraph
// "middle" as a node, then "finish"; "middle" runs "inner", itself a
// compiled subgraph whose "ask" node pauses with interrupt() until a run
// resumes it. Every level appends to the shared "trail".
import { Annotation, StateGraph, interrupt } from "@langchain/langgraph";

const State = Annotation.Root({
  trail: Annotation({ reducer: (a, b) => a.concat(b), default: () => [] }),
  answer: Annotation(),
});

const inner = new StateGraph(State)
  .addNode("ask", () => ({ answer: interrupt({ question: "which way?" }), trail: ["inner asked"] }))
  .addEdge("__start__", "ask")
  .compile();

const middle = new StateGraph(State)
  .addNode("enter", () => ({ trail: ["middle entered"] }))
  .addNode("inner", inner)
  .addEdge("__start__", "enter")
  .addEdge("enter", "inner")
  .compile();

export const graph = new StateGraph(State)
  .addNode("prepare", () => ({ trail: ["prepared"] }))
  .addNode("middle", middle)
  .addNode("finish", (state) => ({ trail: [`finished with ${state.answer}`] }))
  .addEdge("__start__", "prepare")
  .addEdge("prepare", "middle")
  .addEdge("middle", "finish")
  .compile();
