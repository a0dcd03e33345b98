// A deepagents supervisor (createDeepAgent) whose async subagents are
// other graphs of this langgraph.json, as deepagents' docs describe the
// co-deployed layout: "chatter" without url (the SDK reaches the server
// the graph is served by) and "remote" the same graph named by URL (the
// serving server's own, which the graph worker sets in LANGGRAPH_API_URL).
// Its model is ChatOpenAI pointed at the scripted model by OPENAI_BASE_URL.
import { ChatOpenAI } from "@langchain/openai";
import { createDeepAgent } from "deepagents";

export const graph = createDeepAgent({
  model: new ChatOpenAI({
    model: "scripted",
    apiKey: process.env.OPENAI_API_KEY ?? "not-needed",
    configuration: { baseURL: process.env.OPENAI_BASE_URL },
  }),
  systemPrompt: "You coordinate work with async subagents.",
  subagents: [
    { name: "chatter", description: "The project's chat graph, co-deployed.", graphId: "js_chat" },
    { name: "remote", description: "The same chat graph, reached by URL.", graphId: "js_chat", url: process.env.LANGGRAPH_API_URL },
  ],
});
