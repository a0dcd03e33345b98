// A StateGraph with messages: "respond" answers the last human message.
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";

function lastText(messages: BaseMessage[]): string {
  const last = messages[messages.length - 1];
  return typeof last?.content === "string" ? last.content : JSON.stringify(last?.content);
}

export const graph = new StateGraph(MessagesAnnotation)
  .addNode("respond", async (state: typeof MessagesAnnotation.State) => ({
    messages: [new AIMessage({ content: `you said: ${lastText(state.messages)}` })],
  }))
  .addEdge("__start__", "respond")
  .addEdge("respond", "__end__")
  .compile();
