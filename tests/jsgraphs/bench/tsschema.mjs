// What deriving the schemas of the fixture's TypeScript graphs from their types costs at load
// (internal/jsworker/node/tsschema.mjs, as a worker runs it): each graph's time (logged by the
// module), then the wall and CPU time of all of them. A second run reads the cache in
// node_modules/.cache/agentserver-schemas; remove that folder to compile again.
// Run: node tests/jsgraphs/bench/tsschema.mjs (figures in docs/benchmarks.md).
import fs from "node:fs"; import path from "node:path"; import { fileURLToPath } from "node:url";
const here = path.dirname(fileURLToPath(import.meta.url));
const { schemasFromTypes } = await import(path.join(here, "..", "..", "..", "internal", "jsworker", "node", "tsschema.mjs"));
const { graphs } = JSON.parse(fs.readFileSync(path.join(here, "..", "langgraph.json"), "utf8"));
const started = performance.now(); const cpu = process.cpuUsage();
for (const [id, spec] of Object.entries(graphs)) {
  const [file, exp] = (typeof spec === "string" ? spec : spec.path).split(":");
  // The graphs a worker derives: TypeScript, built on Annotation (zod and StateSchema ones are read at run time).
  if (!/\.(ts|mts|cts)$/.test(file) || !/Annotation/.test(fs.readFileSync(path.join(here, "..", file), "utf8"))) continue;
  schemasFromTypes(id, path.join(here, "..", file), exp ?? "default");
}
const used = process.cpuUsage(cpu);
console.log(`all: ${Math.round(performance.now() - started)} ms wall, ${Math.round((used.user + used.system) / 1000)} ms CPU`);
