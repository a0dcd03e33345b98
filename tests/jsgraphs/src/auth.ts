// A custom Auth module in the style of the LangGraph.js docs ("How to add
// custom authentication", "Resource authorization"): bearer tokens name the
// users, every resource is owned by its creator, and the store is split by
// user. The server runs it in its graph workers (langgraph.auth.json).
import { Auth, HTTPException } from "@langchain/langgraph-sdk/auth";

// The users and their tokens: a stand-in for an identity provider.
const USERS: Record<string, { identity: string; permissions: string[]; org: string }> = {
  "token-alice": { identity: "alice", permissions: ["threads:write"], org: "acme" },
  "token-bob": { identity: "bob", permissions: ["threads:write"], org: "globex" },
  "token-carol": { identity: "carol", permissions: [], org: "acme" },
};

// How often authenticate ran (the custom routes' app shows it, so that
// tests can see auth.cache at work).
let calls = 0;
export function authenticateCalls(): number {
  return calls;
}

export const auth = new Auth()
  .authenticate(async (request: Request) => {
    calls++;
    // A bearer token, or a user's own API key.
    const authorization = request.headers.get("authorization");
    const token = authorization?.split(" ").at(-1) ?? request.headers.get("x-api-key");
    if (token === "token-mallory") throw new HTTPException(403, { message: "Account suspended" });
    const user = token ? USERS[token] : undefined;
    if (user === undefined) throw new HTTPException(401, { message: "Invalid token" });
    return user;
  })
  // Everything a user creates is theirs, and they see only what is theirs.
  .on("*", ({ value, user }) => {
    if ("metadata" in value) {
      value.metadata ??= {};
      value.metadata.owner = user.identity;
    }
    return { owner: user.identity };
  })
  // Creating threads needs a permission; a new thread records its owner,
  // the owner's organisation and who may read it.
  .on("threads:create", ({ value, user, permissions }) => {
    if (!permissions.includes("threads:write")) return false;
    value.metadata ??= {};
    value.metadata.owner = user.identity;
    value.metadata.org = (user as unknown as { org: string }).org;
    value.metadata.readers = [user.identity];
    return { owner: user.identity };
  })
  // Reads go by the readers list, searches by the owner.
  .on("threads:read", ({ user }) => ({ readers: { $contains: user.identity } }))
  .on("threads:search", ({ user }) => ({ owner: { $eq: user.identity } }))
  // Each user's memories live under their own namespace.
  .on("store", ({ user, value }) => {
    const v = value as { namespace?: string[] | null };
    if (v.namespace != null) v.namespace = [user.identity, ...v.namespace];
  });
