// Human in the loop: "ask" pauses with interrupt() until a run resumes it
// with Command({resume}); the export is an uncompiled StateGraph.
import { Annotation, StateGraph, interrupt } from "@langchain/langgraph";

const State = Annotation.Root({
  question: Annotation(),
  answer: Annotation(),
  done: Annotation(),
});

export const builder = new StateGraph(State)
  .addNode("ask", (state) => {
    const answer = interrupt({ question: state.question ?? "proceed?" });
    return { answer };
  })
  .addNode("finish", (state) => ({ done: `answered: ${state.answer}` }))
  .addEdge("__start__", "ask")
  .addEdge("ask", "finish")
  .addEdge("finish", "__end__");
