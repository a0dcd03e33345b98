// A small A2A agent built with the official JavaScript SDK (@a2a-js/sdk),
// for the Go tests that use a foreign A2A agent as an async subagent. It
// serves JSON-RPC with the SDK's Express handler (v1.0, and the v0.3 wire
// the Go transport speaks through the SDK's compatibility layer) at
// http://127.0.0.1:<port>/ and prints "listening <url>" once ready.
//
// Behaviour, deterministic on purpose:
//   * a message "hold <tag>" makes a task that stays working until it is
//     cancelled, or until a newer message arrives in the same context (a
//     follow-up message is a change of plan: the held task is cancelled);
//   * any other message makes a task that completes after one short step
//     with the answer "echo: <text>" as artifact and status message.
// Every request is logged as "rpc <method>" and every completed task as
// "completed <task id>", so a test can see the wire and the timing.
import express from "express";
import { randomUUID } from "node:crypto";
import { TaskState, Role } from "@a2a-js/sdk";
import { DefaultRequestHandler, InMemoryTaskStore, AgentEvent } from "@a2a-js/sdk/server";
import { jsonRpcHandler, UserBuilder } from "@a2a-js/sdk/server/express";

const STEP_MS = 20;

const textPart = (value) => ({ content: { $case: "text", value }, mediaType: "text/plain", filename: "", metadata: {} });

const agentMessage = (taskId, contextId, text) => ({
  role: Role.ROLE_AGENT,
  messageId: randomUUID(),
  taskId,
  contextId,
  parts: [textPart(text)],
  metadata: {},
  extensions: [],
  referenceTaskIds: [],
});

const status = (taskId, contextId, state, text) =>
  AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: { state, message: text === undefined ? undefined : agentMessage(taskId, contextId, text), timestamp: new Date().toISOString() },
    metadata: undefined,
  });

// held: taskId -> {contextId, bus, done}; the running "hold" tasks.
const held = new Map();

function cancelHeld(taskId, bus) {
  const h = held.get(taskId);
  if (!h) return false;
  held.delete(taskId);
  (bus ?? h.bus).publish(status(taskId, h.contextId, TaskState.TASK_STATE_CANCELED, "cancelled"));
  (bus ?? h.bus).finished();
  h.done();
  return true;
}

const executor = {
  async execute(ctx, bus) {
    const { taskId, contextId } = ctx;
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");
    for (const [id, h] of held) {
      if (h.contextId === contextId) cancelHeld(id);
    }
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [ctx.userMessage],
        metadata: {},
      }),
    );
    if (text.startsWith("hold")) {
      await new Promise((done) => held.set(taskId, { contextId, bus, done }));
      return;
    }
    await new Promise((r) => setTimeout(r, STEP_MS));
    const answer = `echo: ${text}`;
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: { artifactId: randomUUID(), name: "answer", description: "", parts: [textPart(answer)], metadata: {}, extensions: [] },
        append: false,
        lastChunk: true,
        metadata: {},
      }),
    );
    bus.publish(status(taskId, contextId, TaskState.TASK_STATE_COMPLETED, answer));
    bus.finished();
    console.log(`completed ${taskId}`);
  },
  async cancelTask(taskId, bus) {
    cancelHeld(taskId, bus);
  },
};

const app = express();
app.use(express.json());
app.use((req, _res, next) => {
  console.log(`rpc ${req.body?.method}`);
  next();
});
const srv = app.listen(0, "127.0.0.1", () => {
  const url = `http://127.0.0.1:${srv.address().port}/`;
  const card = {
    name: "js echo",
    description: "Echoes messages; holds tasks that say hold.",
    supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "0.3", tenant: "" }],
    version: "1.0.0",
    capabilities: { streaming: true, pushNotifications: false, extensions: [] },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
    signatures: [],
  };
  const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  app.post("/", jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication, legacyCompat: { enabled: true } }));
  console.log(`listening ${url}`);
});
