// A tool-calling agent: @langchain/openai's ChatOpenAI (pointed at the
// server's scripted model by OPENAI_BASE_URL) with one tool. The model does
// not set streaming: a run that streams messages gets its tokens anyway
// (LangGraph's messages handler prefers streaming), and ChatOpenAI's
// streaming invoke estimates token counts with tiktoken, whose encodings it
// fetches from the internet: tests never leave 127.0.0.1.
import { tool } from "@langchain/core/tools";
import { ChatOpenAI } from "@langchain/openai";
import { MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { ToolNode, toolsCondition } from "@langchain/langgraph/prebuilt";
import { z } from "zod";

const getWeather = tool(async ({ city }: { city: string }) => `It is sunny in ${city}.`, {
  name: "get_weather",
  description: "The weather of a city.",
  schema: z.object({ city: z.string() }),
});

const model = new ChatOpenAI({
  model: "scripted",
  apiKey: process.env.OPENAI_API_KEY ?? "not-needed",
  configuration: { baseURL: process.env.OPENAI_BASE_URL },
}).bindTools([getWeather]);

export const agent = new StateGraph(MessagesAnnotation)
  .addNode("agent", async (state: typeof MessagesAnnotation.State, config) => ({
    messages: [await model.invoke(state.messages, config)],
  }))
  .addNode("tools", new ToolNode([getWeather]))
  .addEdge("__start__", "agent")
  .addConditionalEdges("agent", toolsCondition)
  .addEdge("tools", "agent")
  .compile();
