import type { LlmClient, WorkflowContext } from "../context.ts";
import { agentLoopCall } from "./calls/agent-loop-call.ts";
import { spawnCall } from "./calls/child-call.ts";
import { continueAsNew } from "./calls/continue-as-new.ts";
import { domainCall } from "./calls/domain-call.ts";
import { llmCall } from "./calls/llm-call.ts";
import { patchedMarker } from "./calls/patched-marker.ts";
import { sandboxCall } from "./calls/sandbox-call.ts";
import { toolCall } from "./calls/tool-call.ts";
import { valueCall } from "./calls/value-call.ts";
import { waitCall } from "./calls/wait-call.ts";
import type { EnvelopeState } from "./envelope-state.ts";

/**
 * The `ctx` a workflow receives: the API the workflow code calls, each method a kind of call
 * (`calls/`) over the execution's state. Built once per execution.
 */
export function workflowContext(x: EnvelopeState): WorkflowContext {
  const run = x.run;
  const waits = x.waits;
  const llm: LlmClient = {
    generate: async (request) => (await llmCall(x, request)).text,
    chat: (request) => llmCall(x, request),
  };
  const ctx: WorkflowContext = {
    runId: run.id,
    agent: run.agent,
    workflow: run.workflow,
    get isReplaying() {
      return x.cursor.isReplaying;
    },
    llm,
    tool: (name, args, options) => toolCall(x, name, args, options) as Promise<never>,
    agentLoop: (options) => agentLoopCall(x, options),
    domain: (domain, entity, params = {}) => domainCall(x, domain, entity, params),
    now: async () => new Date(await valueCall(x, "now", () => x.host.now())),
    random: () => valueCall(x, "random", () => x.host.random()),
    uuid: () => valueCall(x, "uuid", () => x.host.randomUUID()),
    log: (message, fields) => x.host.log("info", message, { runId: run.id, ...fields }),
    waitForSignal: (name, options) => waitCall(x, () => waits.signal(name, options)),
    askUser: (question, options) => waitCall(x, () => waits.ask(question, options)),
    sleep: (ms) => waitCall(x, () => waits.sleep(ms)),
    sleepUntil: (at) => waitCall(x, () => waits.sleepUntil(at)),
    requestApproval: (request) => waitCall(x, () => waits.approval(request)),
    spawn: (agent, workflow, input, options) =>
      spawnCall(x, agent, workflow, input, options?.parentClosePolicy ?? "suspend") as Promise<never>,
    sandbox: (name, spec) => sandboxCall(x, name, spec),
    patched: (changeId) => patchedMarker(x, changeId),
    continueAsNew: (input) => continueAsNew(x, input),
  };
  return ctx;
}
