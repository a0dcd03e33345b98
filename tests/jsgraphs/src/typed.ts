// A graph whose state is a zod schema: its assistant's schemas are derived
// from it (field types, descriptions, what is required), as the JS server
// derives them at run time.
import { StateGraph } from "@langchain/langgraph";
import { z } from "zod";

const State = z.object({
  question: z.string().describe("What to answer"),
  answer: z.string().optional(),
});

export const graph = new StateGraph(State)
  .addNode("respond", (state: z.infer<typeof State>) => ({ answer: `an answer to ${state.question}` }))
  .addEdge("__start__", "respond")
  .compile();
