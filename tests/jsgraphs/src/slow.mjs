// A slow node that honours the run's AbortSignal: cancellation stops it at
// once. input.seconds sets how long it works.
import { Annotation, StateGraph } from "@langchain/langgraph";

const State = Annotation.Root({ seconds: Annotation(), finished: Annotation() });

function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(t);
      reject(signal.reason ?? new Error("aborted"));
    }, { once: true });
  });
}

export const graph = new StateGraph(State)
  .addNode("work", async (state, config) => {
    await sleep((state.seconds ?? 30) * 1000, config.signal);
    return { finished: true };
  })
  .addEdge("__start__", "work")
  .compile();
