// A graph that keeps a memory in the server's store: it reads the user's
// counter, increments it and searches the users' counters. (LangGraph.js
// wraps a graph's store in its AsyncBatchedStore, which has no
// listNamespaces: a node cannot list namespaces, whatever the store.)
import { Annotation, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";

const State = Annotation.Root({
  user: Annotation<string>(),
  visits: Annotation<number>(),
  found: Annotation<number>(),
});

export const graph = new StateGraph(State)
  .addNode("remember", async (state: typeof State.State, config: LangGraphRunnableConfig) => {
    const store = config.store!;
    const ns = ["visits", state.user ?? "anonymous"];
    const item = await store.get(ns, "counter");
    const visits = ((item?.value?.visits as number | undefined) ?? 0) + 1;
    await store.put(ns, "counter", { visits });
    const found = (await store.search(["visits"], { filter: { visits } })).length;
    return { visits, found };
  })
  .addEdge("__start__", "remember")
  .compile();
