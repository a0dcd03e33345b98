// A graph that keeps a memory in the server's store: it reads the user's
// counter, increments it and lists the user's namespaces.
import { Annotation, StateGraph, type LangGraphRunnableConfig } from "@langchain/langgraph";

const State = Annotation.Root({
  user: Annotation<string>(),
  visits: Annotation<number>(),
  namespaces: Annotation<string[][]>(),
  found: Annotation<number>(),
});

export const graph = new StateGraph(State)
  .addNode("remember", async (state: typeof State.State, config: LangGraphRunnableConfig) => {
    const store = config.store!;
    const ns = ["visits", state.user ?? "anonymous"];
    const item = await store.get(ns, "counter");
    const visits = ((item?.value?.visits as number | undefined) ?? 0) + 1;
    await store.put(ns, "counter", { visits });
    const namespaces = await store.listNamespaces({ prefix: ["visits"] });
    const found = (await store.search(["visits"], { filter: { visits } })).length;
    return { visits, namespaces, found };
  })
  .addEdge("__start__", "remember")
  .compile();
