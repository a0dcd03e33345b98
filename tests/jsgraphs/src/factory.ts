// A factory export: called with each run's config, it builds a graph that
// greets with config.configurable.greeting.
import { Annotation, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";

const State = Annotation.Root({ name: Annotation<string>(), greeting: Annotation<string>() });

export function makeGraph(config: LangGraphRunnableConfig) {
  const greeting = (config.configurable?.greeting as string | undefined) ?? "hello";
  return new StateGraph(State)
    .addNode("greet", (state: typeof State.State) => ({ greeting: `${greeting}, ${state.name}` }))
    .addEdge("__start__", "greet")
    .compile();
}
