// Module hooks (module.register) that run TypeScript graphs with the
// typescript package of the user's project, when it has no tsx: .ts and
// .mts files are transpiled to ES modules with ts.transpileModule (types
// are not checked), and a relative import of "./x.js" finds "./x.ts" as
// TypeScript's module resolution does.
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

let ts;

export async function initialize(data) {
  const mod = await import(data.typescript);
  ts = mod.default ?? mod;
}

const tsFile = /\.(ts|mts|tsx)$/i;

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (err) {
    const relative = specifier.startsWith("./") || specifier.startsWith("../");
    if (!relative || !/\.(m?js)$/.test(specifier) || !context.parentURL || !tsFile.test(context.parentURL)) throw err;
    return next(specifier.replace(/\.js$/, ".ts").replace(/\.mjs$/, ".mts"), context);
  }
}

export async function load(url, context, next) {
  if (!url.startsWith("file:") || !tsFile.test(url)) return next(url, context);
  const fileName = fileURLToPath(url);
  const source = await readFile(fileName, "utf8");
  const out = ts.transpileModule(source, {
    fileName,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      jsx: ts.JsxEmit.ReactJSX,
      esModuleInterop: true,
      sourceMap: false,
      inlineSourceMap: true,
    },
  });
  return { format: "module", source: out.outputText, shortCircuit: true };
}
