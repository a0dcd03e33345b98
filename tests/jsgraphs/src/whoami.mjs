// Answers who started the run: config.configurable.langgraph_auth_user,
// which the server fills from the request's user.
import { Annotation, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ user: Annotation() });

export const graph = new StateGraph(State)
  .addNode("whoami", async (_state, config) => {
    const u = config.configurable?.langgraph_auth_user ?? null;
    return { user: u && { identity: u.identity, org: u.org ?? null, permissions: u.permissions } };
  })
  .addEdge("__start__", "whoami")
  .compile();
