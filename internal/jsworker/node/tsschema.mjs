// JSON Schemas of a graph built on Annotation, read from its TypeScript
// types with the TypeScript compiler of the user's project, as the JS
// server's static parser derives them: the export's type is resolved (a
// compiled graph, a StateGraph, a factory returning either, awaited), and
// its state type, its builder's input, output and config definitions are
// converted to JSON Schema (types, literals and unions, arrays, nested
// objects, LangChain message lists as message schemas; a field whose type
// admits undefined is not required).
//
// The worker imports this module only for TypeScript graphs that have no
// zod or StateSchema definitions. It needs no package of its own: the
// compiler is the project's (resolved from the graph file's folder), and
// its absence is a reason the worker logs in one line. What a compilation
// found is cached in the project's node_modules/.cache (schemasFromTypes).
import { createHash } from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** NotDerivable is the reason a graph's schemas were not derived from its types. */
export class NotDerivable extends Error {
  name = "NotDerivable";
}

// One program per tsconfig (or per folder without one), grown graph by
// graph: a later graph reuses the files the earlier ones parsed.
const programs = new Map();

/**
 * schemasFromTypes returns the input, output, state and config JSON
 * Schemas of the graph exported as exportName by the TypeScript file, each
 * omitted when its type says nothing (a config the graph does not
 * declare), and logs one line: how long the derivation took (stdout), or
 * why the graph keeps its channel schemas (stderr). It never throws: what
 * it could not derive is absent.
 *
 * Results (and reasons) are cached in the project's node_modules/.cache,
 * keyed by this module, the compiler's version, the file and the export,
 * and valid while every file the compiler read keeps its size and
 * modification time: a restart costs a few stat calls instead of a
 * compilation.
 */
export function schemasFromTypes(id, file, exportName) {
  const started = performance.now();
  const took = (cached) => `${Math.round(performance.now() - started)} ms${cached ? " (cached)" : ""}`;
  let cache;
  try {
    const compiler = locateCompiler(file);
    cache = new Cache(compiler, file, exportName);
    const hit = cache.read();
    if (hit?.error !== undefined) throw Object.assign(new NotDerivable(hit.error), { cached: true });
    if (hit !== undefined) {
      console.log(`graph "${id}": schemas derived from the TypeScript types of ${file} in ${took(true)}`);
      return hit.schemas;
    }
    const { schemas, files } = derive(loadCompiler(compiler.where), file, exportName);
    cache.write(files, { schemas });
    console.log(`graph "${id}": schemas derived from the TypeScript types of ${file} in ${took(false)}`);
    return schemas;
  } catch (err) {
    if (err instanceof NotDerivable && err.files !== undefined) cache?.write(err.files, { error: err.message });
    const why = err instanceof NotDerivable ? err.message : `the TypeScript compiler failed: ${String(err?.stack ?? err).split("\n").slice(0, 2).join(" ")}`;
    console.error(`graph "${id}": schemas from its state channels only: ${why}${err.cached ? " (cached)" : ""}`);
    return {};
  }
}

/** derive reads the schemas from the types; files are those the compiler read (the cache's inputs). */
function derive(ts, file, exportName) {
  const { program, sourceFile, configFile } = programFor(ts, file);
  const files = [...program.getSourceFiles().map((f) => f.fileName), ...(configFile ? [configFile] : [])];
  const fail = (message) => Object.assign(new NotDerivable(message), { files });
  const checker = program.getTypeChecker();
  const graphType = compiledType(ts, checker, exportType(ts, checker, sourceFile, exportName, file, fail));
  const prop = (type, name) => {
    const sym = type && checker.getPropertyOfType(type, name);
    return sym ? checker.getTypeOfSymbol(sym) : undefined;
  };
  const builder = prop(graphType, "builder");
  if (builder === undefined || prop(builder, "_inputDefinition") === undefined) {
    throw fail(`export "${exportName}" of ${file} is not typed as a StateGraph (its type is ${checker.typeToString(graphType)})`);
  }
  const conv = new Converter(ts, checker);
  const out = {};
  const state = prop(graphType, "~RunOutput") ?? prop(graphType, "RunOutput");
  if (state !== undefined) out.state = conv.document(state, true);
  if (Object.keys(out.state?.properties ?? {}).length === 0) throw fail(`the type of export "${exportName}" of ${file} names no state channels`);
  out.input = conv.document(definitionType(checker, prop(builder, "_inputDefinition"), "UpdateType"), false);
  out.output = conv.document(definitionType(checker, prop(builder, "_outputDefinition"), "ValueType"), true);
  const config = prop(builder, "_configSchema");
  if (config !== undefined) {
    const schema = conv.document(definitionType(checker, checker.getNonNullableType(config), "UpdateType"), false);
    if (Object.keys(schema.properties ?? {}).length > 0) out.config = schema;
  }
  return { schemas: out, files };
}

/** locateCompiler finds the project's typescript from the graph file's folder, without loading it. */
function locateCompiler(file) {
  const req = createRequire(file);
  let where;
  try {
    where = req.resolve("typescript");
  } catch {
    throw new NotDerivable(`typescript is not installed in the project of ${file} (npm install --save-dev typescript to derive them from the TypeScript types)`);
  }
  let version = "?";
  try {
    version = JSON.parse(fs.readFileSync(req.resolve("typescript/package.json"), "utf8")).version;
  } catch {
    // an unusual layout: the cache keys on the path alone
  }
  const nodeModules = where.slice(0, where.lastIndexOf(`${path.sep}node_modules${path.sep}`) + `${path.sep}node_modules`.length);
  return { where, version, cacheDir: path.join(nodeModules, ".cache", "agentserver-schemas") };
}

function loadCompiler(where) {
  const ts = createRequire(where)(where);
  if (typeof ts.createProgram !== "function" || typeof ts.findConfigFile !== "function") throw new NotDerivable(`${where} is not the TypeScript compiler`);
  return ts;
}

const selfHash = createHash("sha256").update(fs.readFileSync(fileURLToPath(import.meta.url))).digest("hex");

/** Cache keeps one graph's derivation in a file, with the size and mtime of every file it read. */
class Cache {
  static keep = 200; // entries; the oldest go beyond

  constructor(compiler, file, exportName) {
    this.dir = compiler.cacheDir;
    const key = createHash("sha256").update(JSON.stringify([selfHash, compiler.where, compiler.version, file, exportName])).digest("hex");
    this.path = path.join(this.dir, `${key.slice(0, 32)}.json`);
  }

  read() {
    let entry;
    try {
      entry = JSON.parse(fs.readFileSync(this.path, "utf8"));
    } catch {
      return undefined;
    }
    for (const [name, size, mtime] of entry.files ?? []) {
      try {
        const st = fs.statSync(name);
        if (st.size !== size || st.mtimeMs !== mtime) return undefined;
      } catch {
        return undefined;
      }
    }
    return entry.result;
  }

  /** write stores a result; a cache it cannot write is no error (a read-only node_modules). */
  write(files, result) {
    try {
      const stamped = files.map((name) => {
        const st = fs.statSync(name);
        return [name, st.size, st.mtimeMs];
      });
      fs.mkdirSync(this.dir, { recursive: true });
      const tmp = `${this.path}.${process.pid}.tmp`;
      fs.writeFileSync(tmp, JSON.stringify({ files: stamped, result }));
      fs.renameSync(tmp, this.path); // whole, for a worker reading it meanwhile
      const names = fs.readdirSync(this.dir).filter((n) => n.endsWith(".json"));
      if (names.length > Cache.keep) {
        const byAge = names.map((n) => [n, fs.statSync(path.join(this.dir, n)).mtimeMs]).sort((a, b) => a[1] - b[1]);
        for (const [n] of byAge.slice(0, names.length - Cache.keep)) fs.rmSync(path.join(this.dir, n), { force: true });
      }
    } catch {
      // no cache this time
    }
  }
}

function programFor(ts, file) {
  const configFile = ts.findConfigFile(path.dirname(file), ts.sys.fileExists);
  const key = configFile ?? path.dirname(file);
  let entry = programs.get(key);
  if (entry === undefined) {
    let options = {};
    if (configFile !== undefined) {
      const parsed = ts.getParsedCommandLineOfConfigFile(configFile, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
      options = parsed?.options ?? {};
    } else {
      options = {
        module: ts.ModuleKind.ESNext,
        moduleResolution: ts.ModuleResolutionKind.Bundler,
        target: ts.ScriptTarget.ES2022,
        allowImportingTsExtensions: true,
        esModuleInterop: true,
      };
    }
    // Only the ES2022 library (no DOM, no @types): a state's types rarely
    // need more, and the DOM's declarations would double the time to load.
    // Undefined must stay apart from the types it joins (optional fields),
    // and nothing is emitted or checked beyond what the schemas ask for.
    options = { ...options, strict: true, strictNullChecks: true, noEmit: true, skipLibCheck: true, types: [], lib: ["lib.es2022.d.ts"], incremental: false, composite: false };
    entry = { options, roots: [], program: undefined, host: cachingHost(ts, options) };
    programs.set(key, entry);
  }
  if (entry.program?.getSourceFile(file) === undefined) {
    entry.roots = [...entry.roots, file]; // a new array: the old program keeps its own
    entry.program = ts.createProgram({ rootNames: entry.roots, options: entry.options, host: entry.host, oldProgram: entry.program });
  }
  const sourceFile = entry.program.getSourceFile(file);
  if (sourceFile === undefined) throw new NotDerivable(`the TypeScript compiler did not read ${file}`);
  return { program: entry.program, sourceFile, configFile };
}

/** cachingHost is a compiler host that parses each file once, so that a grown program reuses the files it had. */
function cachingHost(ts, options) {
  const host = ts.createCompilerHost(options);
  const parsed = new Map();
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    let sf = parsed.get(fileName);
    if (sf === undefined || shouldCreate) {
      sf = getSourceFile(fileName, languageVersion, onError, shouldCreate);
      if (sf !== undefined) parsed.set(fileName, sf);
    }
    return sf;
  };
  return host;
}

function exportType(ts, checker, sourceFile, exportName, file, fail) {
  const moduleSymbol = checker.getSymbolAtLocation(sourceFile);
  if (moduleSymbol === undefined) throw fail(`${file} is not a module to the TypeScript compiler`);
  let sym = checker.getExportsOfModule(moduleSymbol).find((s) => s.name === exportName);
  if (sym === undefined) throw fail(`the TypeScript compiler finds no export "${exportName}" in ${file}`);
  if (sym.flags & ts.SymbolFlags.Alias) sym = checker.getAliasedSymbol(sym);
  return checker.getTypeOfSymbolAtLocation(sym, sourceFile);
}

/** compiledType follows a factory's return (awaited) and a StateGraph's compile() to the compiled graph's type. */
function compiledType(ts, checker, type) {
  const calls = type.getCallSignatures();
  if (calls.length > 0 && checker.getPropertyOfType(type, "builder") === undefined) type = calls[0].getReturnType();
  type = checker.getAwaitedType(type) ?? type;
  const compile = checker.getPropertyOfType(type, "compile");
  if (compile !== undefined && checker.getPropertyOfType(type, "builder") === undefined) {
    const sigs = checker.getTypeOfSymbol(compile).getCallSignatures();
    if (sigs.length > 0) type = sigs[0].getReturnType();
  }
  return type;
}

/**
 * definitionType is the object type of a state definition (channel name ->
 * channel or channel factory) with each channel replaced by its ValueType
 * or UpdateType, as LangGraph's StateType and UpdateType map them. The
 * result is a plain map of names to types, with the definition's symbols
 * kept for their doc comments.
 */
function definitionType(checker, definition, which) {
  const fields = [];
  for (const sym of checker.getPropertiesOfType(definition)) {
    let channel = checker.getTypeOfSymbol(sym);
    const calls = channel.getCallSignatures();
    if (calls.length > 0) channel = calls[0].getReturnType();
    const member = checker.getPropertyOfType(channel, which);
    if (member !== undefined) fields.push({ sym, type: checker.getTypeOfSymbol(member) });
  }
  return { fields };
}

const SCHEMA = "http://json-schema.org/draft-07/schema#";

// A LangChain message as the API shows it (a plain dict).
const MESSAGE = {
  type: "object",
  description: "A LangChain message, serialized as a plain object.",
  properties: {
    type: { type: "string", enum: ["ai", "human", "system", "tool", "function", "developer", "remove"] },
    content: { anyOf: [{ type: "string" }, { type: "array", items: {} }] },
    id: { type: "string" },
    name: { type: "string" },
    tool_calls: { type: "array", items: { type: "object" } },
    tool_call_id: { type: "string" },
    additional_kwargs: { type: "object" },
    response_metadata: { type: "object" },
  },
  required: ["type", "content"],
  additionalProperties: true,
};

/** Converter turns TypeScript types into JSON Schema. */
class Converter {
  static maxDepth = 8;

  constructor(ts, checker) {
    this.ts = ts;
    this.checker = checker;
    this.usesMessage = false;
    this.open = new Set();
  }

  /** document is the schema of an object type (or a definitionType) with $schema and definitions. */
  document(type, withRequired) {
    this.usesMessage = false;
    const schema = type.fields !== undefined ? this.fields(type.fields, withRequired) : this.convert(type, withRequired);
    if (this.usesMessage) schema.definitions = { BaseMessage: MESSAGE };
    schema.$schema = SCHEMA;
    return schema;
  }

  fields(fields, withRequired) {
    const properties = {};
    const required = [];
    for (const { sym, type } of fields) {
      const s = this.convert(type, true);
      if (s === undefined) continue;
      const doc = this.ts.displayPartsToString(sym.getDocumentationComment(this.checker)).trim();
      if (doc !== "" && s.description === undefined) s.description = doc;
      properties[sym.name] = s;
      if (withRequired && !(sym.flags & this.ts.SymbolFlags.Optional) && !this.admitsUndefined(type)) required.push(sym.name);
    }
    const out = { type: "object", properties };
    if (required.length > 0) out.required = required.sort();
    return out;
  }

  admitsUndefined(type) {
    const F = this.ts.TypeFlags;
    const parts = type.isUnion() ? type.types : [type];
    return parts.some((t) => t.flags & (F.Undefined | F.Void | F.Any | F.Unknown));
  }

  /** isMessage: a class deriving from @langchain/core's BaseMessage (whichever copy the project has). */
  isMessage(type, seen = new Set()) {
    const { ts, checker } = this;
    const target = type.target ?? type; // a generic class's instance: its class
    const sym = target.symbol;
    if (!(type.flags & ts.TypeFlags.Object) || sym === undefined || seen.has(sym)) return false;
    seen.add(sym);
    if (sym.name === "BaseMessage" && (sym.declarations ?? []).some((d) => /[\\/]@langchain[\\/]core[\\/]/.test(d.getSourceFile().fileName))) return true;
    if (!(target.objectFlags & ts.ObjectFlags.ClassOrInterface)) return false;
    return (checker.getBaseTypes(target) ?? []).some((b) => this.isMessage(b, seen));
  }

  /** isMessageList: an array whose elements are (or include) LangChain messages. */
  isMessageList(type) {
    if (!this.checker.isArrayType(type)) return false;
    const elem = this.checker.getTypeArguments(type)[0];
    return elem !== undefined && (elem.isUnion() ? elem.types : [elem]).some((t) => this.isMessage(t));
  }

  messageRef() {
    this.usesMessage = true;
    return { $ref: "#/definitions/BaseMessage" };
  }

  /** convert returns the schema of a type; undefined for what JSON cannot hold (functions, never, undefined). */
  convert(type, withRequired) {
    const { ts, checker } = this;
    const F = ts.TypeFlags;
    if (type.flags & (F.Any | F.Unknown)) return {};
    if (type.flags & (F.Never | F.Undefined | F.Void | F.ESSymbolLike)) return undefined;
    if (type.isUnion()) return this.union(type, withRequired);
    if (type.flags & F.StringLiteral) return { type: "string", const: type.value };
    if (type.flags & F.NumberLiteral) return { type: "number", const: type.value };
    if (type.flags & F.BooleanLiteral) return { type: "boolean", const: checker.typeToString(type) === "true" };
    if (type.flags & F.StringLike) return { type: "string" };
    if (type.flags & F.NumberLike) return { type: "number" };
    if (type.flags & F.BooleanLike) return { type: "boolean" };
    if (type.flags & F.BigIntLike) return { type: "integer" };
    if (type.flags & F.Null) return { type: "null" };
    if (type.flags & F.NonPrimitive) return { type: "object" };
    if (type.isIntersection()) return this.object(type, withRequired);
    if (!(type.flags & F.Object)) return {};
    if (this.isMessage(type)) return this.messageRef();
    if (this.isMessageList(type)) return { type: "array", items: this.messageRef() };
    if (checker.isTupleType(type)) {
      const items = checker.getTypeArguments(type).map((t) => this.convert(t, withRequired) ?? {});
      return { type: "array", items, minItems: type.target.minLength, ...(type.target.hasRestElement ? {} : { maxItems: items.length }) };
    }
    if (checker.isArrayType(type)) return { type: "array", items: this.convert(checker.getTypeArguments(type)[0], withRequired) ?? {} };
    if (type.symbol?.name === "Date") return { type: "string", format: "date-time" };
    if (type.getCallSignatures().length > 0 && checker.getPropertiesOfType(type).length === 0) return undefined;
    return this.object(type, withRequired);
  }

  object(type, withRequired) {
    const { checker } = this;
    // A recursive type's inner level, or one too deep to be a state's
    // (a class instance's own fields), stays an open object.
    if (this.open.has(type) || this.open.size >= Converter.maxDepth) return { type: "object" };
    this.open.add(type);
    try {
      const fields = [];
      for (const sym of checker.getPropertiesOfType(type)) {
        const t = checker.getTypeOfSymbol(sym);
        if (t.getCallSignatures().length > 0 && checker.getPropertiesOfType(t).length === 0) continue; // methods
        fields.push({ sym, type: t });
      }
      const out = this.fields(fields, withRequired);
      const index = checker.getIndexInfosOfType(type).find((i) => i.keyType.flags & this.ts.TypeFlags.String);
      if (index !== undefined) out.additionalProperties = this.convert(index.type, withRequired) ?? {};
      if (Object.keys(out.properties).length === 0 && index === undefined) delete out.properties;
      return out;
    } finally {
      this.open.delete(type);
    }
  }

  union(type, withRequired) {
    const F = this.ts.TypeFlags;
    // LangGraph's overwrite wrapper of a reducer's update is no field type.
    const members = type.types.filter((t) => !(t.flags & (F.Undefined | F.Void)) && this.checker.getPropertyOfType(t, "__overwrite__") === undefined);
    // A list of messages, whatever else a reducer accepts beside it.
    if (members.some((t) => this.isMessageList(t))) return { type: "array", items: this.messageRef() };
    const literals = new Map(); // JSON type -> values
    const schemas = [];
    for (const t of members) {
      if (t.flags & (F.StringLiteral | F.NumberLiteral | F.BooleanLiteral)) {
        const kind = t.flags & F.StringLiteral ? "string" : t.flags & F.NumberLiteral ? "number" : "boolean";
        const value = kind === "boolean" ? this.checker.typeToString(t) === "true" : t.value;
        literals.set(kind, [...(literals.get(kind) ?? []), value]);
        continue;
      }
      const s = this.convert(t, withRequired);
      if (s !== undefined) schemas.push(s);
    }
    for (const [kind, values] of literals) {
      if (kind === "boolean" && values.length === 2) schemas.push({ type: "boolean" });
      else if (values.length === 1) schemas.push({ type: kind, const: values[0] });
      else schemas.push({ type: kind, enum: [...values].sort() });
    }
    if (schemas.length === 0) return undefined;
    if (schemas.length === 1) return schemas[0];
    // Plain types join into one type list; anything else is an anyOf.
    if (schemas.every((s) => Object.keys(s).length === 1 && typeof s.type === "string")) return { type: schemas.map((s) => s.type) };
    return { anyOf: schemas };
  }
}
