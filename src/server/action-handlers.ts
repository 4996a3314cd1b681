import type { Json } from "../core/records.ts";
import type { StartOptions } from "../runtime/runtime-options.ts";
import { actorOf } from "./auth.ts";
import { registerPruneHandler } from "./prune-route.ts";
import {
  acceptRoute,
  answerRoute,
  approveRoute,
  cancelRoute,
  denyRoute,
  forkRoute,
  importRoute,
  moveRoute,
  reconcileRoute,
  rejectRoute,
  rerunRoute,
  resumeRoute,
  signalRoute,
  startRunRoute,
} from "./routes.ts";
import { type ServerApp, type ServerContext, wire } from "./server-context.ts";
import { checkStartOptions, startedAgent } from "./start-checks.ts";

/**
 * The mutating routes, by group. Each passes the token's subject as the actor (`by`) to the
 * runtime operation, so the transition log, the approval's decider and the verdict name who did
 * it; the bodies cannot name anyone (strict schemas).
 */
export function registerActionHandlers(app: ServerApp, ctx: ServerContext): void {
  registerStartHandler(app, ctx);
  registerMessageHandlers(app, ctx);
  registerApprovalHandlers(app, ctx);
  registerControlHandlers(app, ctx);
  registerVerdictHandlers(app, ctx);
  registerMoveHandlers(app, ctx);
  registerPruneHandler(app, ctx);
}

/** Import a run from its contract, and move one out (admin: an import writes a record as given). */
function registerMoveHandlers(app: ServerApp, { runtime }: ServerContext): void {
  app.openapi(importRoute, async (c) => {
    const { run, created } = await runtime.importRun(c.req.valid("json"));
    return created
      ? c.json(wire({ run, created: true as const }, c.get("principal")), 201)
      : c.json(wire({ run, created: false as const }, c.get("principal")), 200);
  });

  app.openapi(moveRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { to } = c.req.valid("json");
    const contract = await runtime.moveRun(id, { by: actorOf(c.get("principal")), ...(to !== undefined && { to }) });
    return c.json(wire({ contract: contract as unknown as Record<string, unknown> }, c.get("principal")), 200);
  });
}

/** `POST /api/runs`: starts a run (or returns the run of its key). */
function registerStartHandler(app: ServerApp, ctx: ServerContext): void {
  const { runtime } = ctx;
  app.openapi(startRunRoute, async (c) => {
    const body = c.req.valid("json");
    const principal = c.get("principal");
    const agent = startedAgent(runtime, body.agent, body.workflow);
    checkStartOptions(agent, body, principal);
    // The module `cairn resume` imports is the one this process loaded the agent from, never
    // anything the request says (meta.module is refused by the body's schema).
    const module = Object.hasOwn(ctx.agentModules, agent.name) ? ctx.agentModules[agent.name] : undefined;
    const handle = await runtime.run(body.agent, body.workflow, body.input === undefined ? {} : body.input, {
      by: actorOf(principal),
      ...(body.key !== undefined && { key: body.key }),
      ...(body.budget !== undefined && { budget: stripUndefined(body.budget) }),
      ...(body.compensate !== undefined && { compensate: body.compensate }),
      ...(body.meta !== undefined && { meta: body.meta as Record<string, Json> }),
      ...(body.job !== undefined && { job: stripUndefined(body.job) }),
      ...(body.concurrencyKey !== undefined && { concurrencyKey: body.concurrencyKey }),
      ...(body.concurrencyLimit !== undefined && { concurrencyLimit: body.concurrencyLimit }),
      ...(body.priority !== undefined && { priority: body.priority }),
      ...(module !== undefined && { module }),
      // The caller's trace, also where no context manager carries it (see `traceparentContext`).
      ...traceOptions(c.req.header("traceparent"), c.req.header("tracestate")),
    });
    const run = await runtime.getRun(handle.id);
    return handle.created
      ? c.json(wire({ run, created: true }, c.get("principal")), 201)
      : c.json(wire({ run, created: false }, c.get("principal")), 200);
  });
}

/** What a run is sent: signals and answers to its questions. */
function registerMessageHandlers(app: ServerApp, { runtime }: ServerContext): void {
  app.openapi(signalRoute, async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json");
    const result = await runtime.signal(id, body.name, body.payload, {
      by: actorOf(c.get("principal")),
      ...(body.messageId !== undefined && { messageId: body.messageId }),
    });
    return c.json(wire(result, c.get("principal")), 200);
  });

  app.openapi(answerRoute, async (c) => {
    const { id, waitId } = c.req.valid("param");
    const { value } = c.req.valid("json");
    const wait = await runtime.answer(id, waitId, value, { by: actorOf(c.get("principal")) });
    return c.json(wire({ wait }, c.get("principal")), 200);
  });
}

/** Approve and deny. */
function registerApprovalHandlers(app: ServerApp, { runtime }: ServerContext): void {
  for (const [route, decide] of [
    [approveRoute, runtime.approve.bind(runtime)],
    [denyRoute, runtime.deny.bind(runtime)],
  ] as const) {
    app.openapi(route, async (c) => {
      const { id, waitId } = c.req.valid("param");
      const { digest, note } = c.req.valid("json");
      // The decider is who the token says, never the body: the runtime refuses one that is not
      // among the approval's approvers.
      const wait = await decide(id, waitId, {
        by: actorOf(c.get("principal")),
        digest,
        ...(note !== undefined && { note }),
      });
      return c.json(wire({ wait }, c.get("principal")), 200);
    });
  }
}

/** What changes a run's course: cancel, resume, fork, rerun, reconcile an effect. */
function registerControlHandlers(app: ServerApp, { runtime }: ServerContext): void {
  app.openapi(cancelRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { reason } = c.req.valid("json");
    const run = await runtime.cancel(id, {
      by: actorOf(c.get("principal")),
      ...(reason !== undefined && { reason }),
    });
    return c.json(wire({ run }, c.get("principal")), 200);
  });

  app.openapi(resumeRoute, async (c) => {
    const { id } = c.req.valid("param");
    c.req.valid("json");
    await runtime.resume(id, { by: actorOf(c.get("principal")) });
    return c.json(wire({ run: await runtime.getRun(id) }, c.get("principal")), 200);
  });

  app.openapi(forkRoute, async (c) => {
    const { id } = c.req.valid("param");
    const { fromStep, input } = c.req.valid("json");
    const by = actorOf(c.get("principal"));
    const made = await runtime.fork(id, { fromStep, by, ...(input !== undefined && { input }) });
    return c.json(wire({ run: await runtime.getRun(made.runId), fromStep: made.fromStep }, c.get("principal")), 201);
  });

  app.openapi(rerunRoute, async (c) => {
    const { id } = c.req.valid("param");
    c.req.valid("json");
    const made = await runtime.rerun(id, { by: actorOf(c.get("principal")) });
    return c.json(wire({ run: await runtime.getRun(made.runId), fromStep: made.fromStep }, c.get("principal")), 201);
  });

  app.openapi(reconcileRoute, async (c) => {
    const { id, effectId } = c.req.valid("param");
    const body = c.req.valid("json");
    const run = await runtime.reconcile(id, effectId, {
      outcome: body.outcome,
      by: actorOf(c.get("principal")),
      ...("result" in body && { result: body.result }),
      ...("receipt" in body && { receipt: body.receipt }),
      ...(body.note !== undefined && { note: body.note }),
    });
    return c.json(wire({ run }, c.get("principal")), 200);
  });
}

/** Accept and reject a completed run's outcome. */
function registerVerdictHandlers(app: ServerApp, { runtime }: ServerContext): void {
  for (const [route, verdict] of [
    [acceptRoute, runtime.accept.bind(runtime)],
    [rejectRoute, runtime.reject.bind(runtime)],
  ] as const) {
    app.openapi(route, async (c) => {
      const { id } = c.req.valid("param");
      const { note } = c.req.valid("json");
      const run = await verdict(id, { by: actorOf(c.get("principal")), ...(note !== undefined && { note }) });
      return c.json(wire({ run }, c.get("principal")), 200);
    });
  }
}

/** The fields that are set (`exactOptionalPropertyTypes`: an absent field is not `undefined`). */
function stripUndefined<T extends object>(value: T): { [K in keyof T]: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]: Exclude<T[K], undefined>;
  };
}

/** The start options carrying a request's W3C trace context headers. */
function traceOptions(traceparent: string | undefined, tracestate: string | undefined): StartOptions {
  if (traceparent === undefined) return {};
  return tracestate === undefined ? { traceparent } : { traceparent, tracestate };
}
