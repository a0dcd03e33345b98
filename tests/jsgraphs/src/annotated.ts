// A graph whose state is an Annotation.Root with typed channels: it carries
// no runtime types, so its assistant's schemas are derived from these
// TypeScript types (the worker reads them with the project's typescript),
// as the JS server's static parser derives them.
import { AIMessage, type BaseMessage } from "@langchain/core/messages";
import { Annotation, StateGraph, messagesStateReducer } from "@langchain/langgraph";

type Step = { title: string; done: boolean; note?: string };

const State = Annotation.Root({
  messages: Annotation<BaseMessage[]>({ reducer: messagesStateReducer, default: () => [] }),
  /** What the graph works on. */
  topic: Annotation<string>,
  attempts: Annotation<number>,
  summary: Annotation<string | undefined>,
  mood: Annotation<"calm" | "busy" | "away">,
  steps: Annotation<Step[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  owner: Annotation<{ name: string; email?: string; address: { city: string } }>,
});

const Config = Annotation.Root({
  model: Annotation<string>,
  temperature: Annotation<number>,
});

export const graph = new StateGraph(State, Config)
  .addNode("plan", (state: typeof State.State) => ({
    attempts: (state.attempts ?? 0) + 1,
    steps: [{ title: `think about ${state.topic}`, done: false }],
    messages: [new AIMessage({ content: `planning ${state.topic}` })],
  }))
  .addEdge("__start__", "plan")
  .compile();
