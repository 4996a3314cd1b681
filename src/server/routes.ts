import { createRoute, z } from "@hono/zod-openapi";
import { AgentSchema, MeSchema } from "./info-schemas.ts";
import { acts, administer, approve, body, common, failure, ok, operate, read, reads, security } from "./route-parts.ts";
import {
  AnswerBody,
  CancelBody,
  DecisionBody,
  EffectParams,
  EffectSchema,
  EmptyBody,
  EventsQuery,
  ForkBody,
  ImportBody,
  ListRunsQuery,
  MoveBody,
  ReconcileBody,
  RunParams,
  RunSchema,
  SignalBody,
  StartRunBody,
  StepSchema,
  TransitionSchema,
  VerdictBody,
  WaitParams,
  WaitSchema,
} from "./schemas.ts";

/*
 * THE ROUTE CONTRACT of the HTTP API (`cairn/server`). The dashboard and `CairnClient` are built
 * against exactly this. All bodies are JSON; records are those of src/core/records.ts as stored
 * (timestamps in epoch ms). Every /api route needs `Authorization: Bearer <token>` when the server
 * has tokens (never a token in the URL: read the event streams with fetch). Roles: every role may read
 * (viewer reads only); operator starts and acts on runs; approver approves and denies; admin does
 * everything. Who acts is the token's subject, recorded as actor { kind: "user", id: subject };
 * request bodies are strict (an unknown field, `by`/`actor` included, is 400 INVALID_INPUT).
 * Errors: { error: { code, message, details? } } with the status of src/server/errors.ts.
 *
 * GET  /api/me                      → { subject, roles, auth: "token" | "none", switchable? }
 * GET  /api/agents                  → { agents: [{ name, description, version, workflows: string[],
 *                                     inputs: { [workflow]: JSON Schema }, approvers: string[] }] }
 * GET  /api/runs?agent&workflow&state=A,B&pausedReason&key&since&until&limit&cursor
 *                                   → { runs: RunRecord[], nextCursor: string | null }   newest first;
 *                                     since/until: epoch ms on createdAt (inclusive); limit 1..200
 *                                     (default 50); a page may be short with a nextCursor (a selective
 *                                     filter scans at most 5000 runs per page): follow it until null
 * POST /api/runs { agent, workflow, input? ({} by default), key?, budget?, compensate?, meta?, job? }
 *                                   → 201 { run, created: true } | 200 { run, created: false } (key existed);
 *                                     meta may not hold module, compensate, budget or job (400); budget
 *                                     above the agent's caps, or compensate other than its mode: admin only (403)
 * GET  /api/runs/:id                → { run }
 * GET  /api/runs/:id/transitions    → { transitions }
 * GET  /api/runs/:id/steps          → { steps }
 * GET  /api/runs/:id/effects        → { effects: [{ seq, name, effect }] }  (steps carrying an effect record)
 * GET  /api/runs/:id/waits          → { waits }  (approvals are waits of kind "approval"; details hold
 *                                     action, payload, digest, approvers; the expiry is dueAt)
 * POST /api/runs/:id/signal { name, payload?, messageId? }    → { duplicate, deliveredTo, messageId }
 * POST /api/runs/:id/waits/:waitId/answer { value }           → { wait }
 * POST /api/runs/:id/approvals/:waitId/approve { digest, note? } → { wait }   (approver: the token's subject)
 * POST /api/runs/:id/approvals/:waitId/deny { digest, note? }    → { wait }
 * POST /api/runs/:id/cancel { reason? }                       → { run }  (as the request left it)
 * POST /api/runs/:id/resume {}                                → { run }
 * POST /api/runs/:id/fork { fromStep, input? }                → 201 { run, fromStep } (the new run; lineage:
 *                                                               run.forkedFrom, the source's forks)
 * POST /api/runs/:id/rerun {}                                 → 201 { run, fromStep } (a FAILED run, from
 *                                                               its failed step)
 * POST /api/runs/:id/effects/:effectId/reconcile { outcome: "applied" | "not_applied", result?, receipt?, note? }
 *                                                             → { run }
 * POST /api/runs/:id/accept { note? }                         → { run }
 * POST /api/runs/:id/reject { note? }                         → { run }
 * GET  /api/runs/:id/contract       → the run contract (runtime.exportRun)
 * POST /api/runs/import <contract>  → 201 { run, created: true } | 200 { run, created: false } (imported before);
 *                                     admin only; 400 CONTRACT_ALTERED names the field, 409 IMPORT_CONFLICT
 * POST /api/runs/:id/move { to? }   → { contract } (keep it: the only copy); the run ends MOVED here; admin only
 * POST /api/runs/prune { olderThan, states?, agent?, batchSize?, dryRun? } → { pruned, runIds, batches, endedBefore,
 *                                     dryRun }: ended runs deleted in batches (prune-route.ts); admin only
 * GET  /api/runs/:id/events         (SSE) this run: "transition", "step", "step.start" / "step.end" /
 *                                     "step.retry", "model.start" / "model.text" /
 *                                     "model.retry" / "model.end", "sandbox.output", then "end" once it
 *                                     settles
 * GET  /api/events                  (SSE) every run: "ready" first, then "transition"
 * GET  /openapi.json                → the OpenAPI 3 document of these routes (no token needed)
 * GET  /metrics                     → the Prometheus text format: runs by state, paused by reason, the
 *                                     backlog, this process's counters; admin, or the metricsToken
 * Every /api request may carry `traceparent` (W3C): a run it starts joins the caller's trace.
 * anything else outside /api        → the static files of `staticRoot` (index.html for unknown paths)
 *
 * Events (src/server/event-handlers.ts has the details):
 * - "transition": TransitionRecord & { state, agent, workflow } (state = the run's new state, `to`).
 * - "step": a StepRecord snapshot each time a step starts, retries or ends (the latest state of
 *   step `seq` replaces any earlier one).
 * - "model.*", "step.start" / "step.end" / "step.retry": the RunEvent of runtime.events, for runs this
 *   server's process executes.
 * - "end": { runId, state, pausedReason } — the run settled (a terminal state other than
 *   INTERRUPTED, which recovery usually takes up again, or NEEDS_RECONCILIATION) and the stream
 *   closes. Stop reading then (an EventSource would reconnect); after resuming or
 *   reconciling the run, open the stream again with the last id.
 * - "ready" (all-runs stream): { resumed } — false when a Last-Event-ID could not be resumed (the
 *   server restarted or it is too old): reload the run list, then carry on from the stream.
 * Ids: per-run `<transitionId>.<stepStamp>.<stepSeq>.<stepVersion>.<modelOffset>.<boot>`; all-runs
 * the backend's transition feed cursor (`<boot>.<seq>` on a backend without one; run-stream.ts and
 * run-feed.ts say why). Send the last one back as Last-Event-ID (or ?from=) to get only what came after.
 */

export const meRoute = createRoute({
  method: "get",
  path: "/api/me",
  tags: ["auth"],
  summary: "Who the token is",
  security,
  middleware: read,
  responses: { 200: ok(MeSchema, "The token's subject and roles"), ...common },
});

export const agentsRoute = createRoute({
  method: "get",
  path: "/api/agents",
  tags: ["runs"],
  summary: "The agents this server knows",
  security,
  middleware: read,
  responses: { 200: ok(z.object({ agents: z.array(AgentSchema) }), "The agents"), ...common },
});

export const listRunsRoute = createRoute({
  method: "get",
  path: "/api/runs",
  tags: ["runs"],
  summary: "List runs, newest first",
  security,
  middleware: read,
  request: { query: ListRunsQuery },
  responses: {
    200: ok(z.object({ runs: z.array(RunSchema), nextCursor: z.string().nullable() }), "A page of runs"),
    400: failure("INVALID_INPUT"),
    ...common,
  },
});

export const startRunRoute = createRoute({
  method: "post",
  path: "/api/runs",
  tags: ["runs"],
  summary: "Start a run (or find the run of its key)",
  security,
  middleware: operate,
  request: { body: body(StartRunBody) },
  responses: {
    201: ok(z.object({ run: RunSchema, created: z.boolean() }), "Started"),
    200: ok(z.object({ run: RunSchema, created: z.boolean() }), "The run of this key existed"),
    422: failure("UNKNOWN_AGENT or UNKNOWN_WORKFLOW"),
    ...acts,
  },
});

export const getRunRoute = createRoute({
  method: "get",
  path: "/api/runs/{id}",
  tags: ["runs"],
  summary: "A run",
  security,
  middleware: read,
  request: { params: RunParams },
  responses: { 200: ok(z.object({ run: RunSchema }), "The run"), ...reads },
});

export const transitionsRoute = createRoute({
  method: "get",
  path: "/api/runs/{id}/transitions",
  tags: ["runs"],
  summary: "A run's transition log",
  security,
  middleware: read,
  request: { params: RunParams },
  responses: { 200: ok(z.object({ transitions: z.array(TransitionSchema) }), "The transitions, in order"), ...reads },
});

export const stepsRoute = createRoute({
  method: "get",
  path: "/api/runs/{id}/steps",
  tags: ["runs"],
  summary: "A run's step journal",
  security,
  middleware: read,
  request: { params: RunParams },
  responses: { 200: ok(z.object({ steps: z.array(StepSchema) }), "The steps, in seq order"), ...reads },
});

export const effectsRoute = createRoute({
  method: "get",
  path: "/api/runs/{id}/effects",
  tags: ["runs"],
  summary: "A run's effects",
  security,
  middleware: read,
  request: { params: RunParams },
  responses: {
    200: ok(
      z.object({ effects: z.array(z.object({ seq: z.number().int(), name: z.string(), effect: EffectSchema })) }),
      "The effect records, in seq order",
    ),
    ...reads,
  },
});

export const waitsRoute = createRoute({
  method: "get",
  path: "/api/runs/{id}/waits",
  tags: ["runs"],
  summary: "A run's waits (questions, approvals, timers, signals, children, retries)",
  security,
  middleware: read,
  request: { params: RunParams },
  responses: { 200: ok(z.object({ waits: z.array(WaitSchema) }), "The waits"), ...reads },
});

export const contractRoute = createRoute({
  method: "get",
  path: "/api/runs/{id}/contract",
  tags: ["runs"],
  summary: "The run contract (cairn.run-contract/1)",
  security,
  middleware: read,
  request: { params: RunParams },
  responses: { 200: ok(z.record(z.string(), z.unknown()), "The run contract"), ...reads },
});

export const signalRoute = createRoute({
  method: "post",
  path: "/api/runs/{id}/signal",
  tags: ["acts"],
  summary: "Send a signal",
  security,
  middleware: operate,
  request: { params: RunParams, body: body(SignalBody) },
  responses: {
    200: ok(
      z.object({ duplicate: z.boolean(), deliveredTo: z.string().nullable(), messageId: z.string() }),
      "Delivered (or a duplicate)",
    ),
    ...acts,
  },
});

export const answerRoute = createRoute({
  method: "post",
  path: "/api/runs/{id}/waits/{waitId}/answer",
  tags: ["acts"],
  summary: "Answer a question (ctx.askUser)",
  security,
  middleware: operate,
  request: { params: WaitParams, body: body(AnswerBody) },
  responses: { 200: ok(z.object({ wait: WaitSchema }), "Answered"), ...acts },
});

const decisionRoute = (decision: "approve" | "deny") =>
  createRoute({
    method: "post",
    path: `/api/runs/{id}/approvals/{waitId}/${decision}`,
    tags: ["acts"],
    summary: decision === "approve" ? "Approve an approval" : "Deny an approval",
    description: "The decider is the token's subject; it must be one of the approval's approvers when it lists any.",
    security,
    middleware: approve,
    request: { params: WaitParams, body: body(DecisionBody) },
    responses: { 200: ok(z.object({ wait: WaitSchema }), "Decided"), ...acts },
  });

export const approveRoute = decisionRoute("approve");
export const denyRoute = decisionRoute("deny");

export const cancelRoute = createRoute({
  method: "post",
  path: "/api/runs/{id}/cancel",
  tags: ["acts"],
  summary: "Cancel a run",
  security,
  middleware: operate,
  request: { params: RunParams, body: body(CancelBody) },
  responses: { 200: ok(z.object({ run: RunSchema }), "The run as the request left it"), ...acts },
});

export const resumeRoute = createRoute({
  method: "post",
  path: "/api/runs/{id}/resume",
  tags: ["acts"],
  summary: "Resume an interrupted run (or a replay divergence, or a suspended orphan)",
  security,
  middleware: operate,
  request: { params: RunParams, body: body(EmptyBody) },
  responses: { 200: ok(z.object({ run: RunSchema }), "The run, resuming"), ...acts },
});

const forked = { 201: ok(z.object({ run: RunSchema, fromStep: z.number().int() }), "The new run"), ...acts };

export const forkRoute = createRoute({
  method: "post",
  path: "/api/runs/{id}/fork",
  tags: ["acts"],
  summary: "Start a new run from this run's journal up to a step, on the server's code",
  security,
  middleware: operate,
  request: { params: RunParams, body: body(ForkBody) },
  responses: forked,
});

export const rerunRoute = createRoute({
  method: "post",
  path: "/api/runs/{id}/rerun",
  tags: ["acts"],
  summary: "Run a FAILED run again from its failed step, on the server's code (a new run)",
  security,
  middleware: operate,
  request: { params: RunParams, body: body(EmptyBody) },
  responses: forked,
});

export const reconcileRoute = createRoute({
  method: "post",
  path: "/api/runs/{id}/effects/{effectId}/reconcile",
  tags: ["acts"],
  summary: "Settle an effect of unknown outcome",
  security,
  middleware: operate,
  request: { params: EffectParams, body: body(ReconcileBody) },
  responses: { 200: ok(z.object({ run: RunSchema }), "The run, reconciling"), ...acts },
});

const verdictRoute = (verdict: "accept" | "reject") =>
  createRoute({
    method: "post",
    path: `/api/runs/{id}/${verdict}`,
    tags: ["acts"],
    summary: verdict === "accept" ? "Accept a completed run's outcome" : "Reject a completed run's outcome",
    security,
    middleware: operate,
    request: { params: RunParams, body: body(VerdictBody) },
    responses: { 200: ok(z.object({ run: RunSchema }), "The run with its verdict"), ...acts },
  });

export const importRoute = createRoute({
  method: "post",
  path: "/api/runs/import",
  tags: ["acts"],
  summary: "Recreate a run from its exported contract (admin)",
  security,
  middleware: administer,
  request: { body: body(ImportBody) },
  responses: {
    201: ok(z.object({ run: RunSchema, created: z.literal(true) }), "The run, imported"),
    200: ok(z.object({ run: RunSchema, created: z.literal(false) }), "The run, imported from this contract before"),
    ...acts,
  },
});

export const moveRoute = createRoute({
  method: "post",
  path: "/api/runs/{id}/move",
  tags: ["acts"],
  summary: "Export a run and end it MOVED here (admin)",
  security,
  middleware: administer,
  request: { params: RunParams, body: body(MoveBody) },
  responses: { 200: ok(z.object({ contract: z.record(z.string(), z.unknown()) }), "The run's contract"), ...acts },
});

export const acceptRoute = verdictRoute("accept");
export const rejectRoute = verdictRoute("reject");

const eventStream = (description: string) => ({
  content: { "text/event-stream": { schema: { type: "string" as const } } },
  description,
});

export const runEventsRoute = createRoute({
  method: "get",
  path: "/api/runs/{id}/events",
  tags: ["events"],
  summary: "A run's live events (SSE)",
  security,
  middleware: read,
  request: { params: RunParams, query: EventsQuery },
  responses: { 200: eventStream("transition, step, model.* and end events"), ...reads },
});

export const allEventsRoute = createRoute({
  method: "get",
  path: "/api/events",
  tags: ["events"],
  summary: "Every run's transitions, live (SSE)",
  security,
  middleware: read,
  request: { query: EventsQuery },
  responses: { 200: eventStream("ready, then transition events"), ...common },
});
