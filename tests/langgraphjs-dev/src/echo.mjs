// The side-by-side benchmark's graph: one node that answers the last
// message with an AI message echoing it (as the server's builtin:echo).
import { AIMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("echo", (state) => {
    const last = state.messages.at(-1);
    return { messages: [new AIMessage(`echo: ${last?.content ?? ""}`)] };
  })
  .addEdge("__start__", "echo")
  .compile();
