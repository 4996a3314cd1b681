import { z } from "@hono/zod-openapi";
import { PAUSED_REASONS, RUN_STATES } from "../core/run-state.ts";
import { MAX_TEXT_LENGTH, textProblem } from "../core/text.ts";
import { RESERVED_META_KEYS, reservedMetaProblem } from "../runtime/runtime-options.ts";
import { RUN_FLOW_FIELDS, startFlowFields } from "./flow-schemas.ts";

/**
 * The zod schemas of the HTTP API: request bodies, parameters and queries (validated), and the
 * records the responses carry (documented in /openapi.json; the records are those of
 * `core/records.ts` as stored, timestamps in epoch milliseconds). Request bodies are strict: an
 * unknown field — `by` or `actor` included, since who acts comes from the token — is refused.
 */

const json = () => z.unknown().openapi({ description: "any JSON value" });

/**
 * Text stored outside a JSON payload (an id, a key, a name, a note, a reason): at most `max`
 * characters, without NUL and lone UTF-16 surrogates, which no store keeps as given (see
 * core/text.ts; the runtime checks the same).
 */
const text = (description: string, options: { max?: number; allowEmpty?: boolean } = {}) =>
  z
    .string()
    .min(options.allowEmpty ? 0 : 1)
    .max(options.max ?? MAX_TEXT_LENGTH)
    .superRefine((value, ctx) => {
      const problem = textProblem(value);
      if (problem) ctx.addIssue({ code: "custom", message: `contains ${problem}; pass well-formed text without NUL` });
    })
    .openapi({ description: `${description} (no NUL, no lone UTF-16 surrogates)` });

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);
const epochMs = () => z.number().int().openapi({ description: "epoch milliseconds" });

export const ActorSchema = z
  .object({ kind: z.enum(["worker", "user", "system", "policy"]), id: z.string() })
  .openapi("Actor");

export const VersionsSchema = z
  .object({ workflow: z.string(), policy: z.string().nullable(), runtime: z.string() })
  .openapi("Versions");

export const SerializedErrorSchema = z
  .object({
    name: z.string(),
    message: z.string(),
    code: z.string().optional(),
    retryable: z.boolean().optional(),
    stack: z.string().optional(),
    cause: json().optional(),
    data: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi("SerializedError");

export const RunStateSchema = z.enum(RUN_STATES).openapi("RunState");
export const PausedReasonSchema = z.enum(PAUSED_REASONS).openapi("PausedReason");

export const RunUsageSchema = z
  .object({
    inputTokens: z.number(),
    outputTokens: z.number(),
    modelCalls: z.number(),
    costUsd: z.number(),
    toolCalls: z.number(),
    steps: z.number(),
  })
  .openapi("RunUsage");

export const RunSchema = z
  .object({
    id: z.string(),
    agent: z.string(),
    workflow: z.string(),
    key: z.string().nullable(),
    state: RunStateSchema,
    pausedReason: PausedReasonSchema.nullable(),
    input: json(),
    output: json().optional(),
    error: SerializedErrorSchema.optional(),
    epoch: z.number().int(),
    leaseOwner: z.string().nullable(),
    leaseExpiresAt: epochMs().nullable(),
    recoveries: z.number().int(),
    lastTransitionId: z.number().int(),
    versions: VersionsSchema,
    meta: z.record(z.string(), z.unknown()),
    parentRunId: z.string().nullable(),
    parentClosePolicy: z.enum(["suspend", "cancel", "abandon"]).nullable(),
    stopRequest: z
      .object({ kind: z.enum(["cancel", "suspend"]), by: ActorSchema, reason: z.string(), at: epochMs() })
      .optional(),
    continuedFrom: z.string().nullable(),
    continuedTo: z.string().nullable(),
    forkedFrom: z
      .object({
        runId: z.string(),
        fromStep: z.number().int(),
        kind: z.enum(["fork", "rerun"]),
        by: ActorSchema,
        at: epochMs(),
      })
      .optional(),
    forks: z
      .array(
        z.object({ runId: z.string(), fromStep: z.number().int(), kind: z.enum(["fork", "rerun"]), at: epochMs() }),
      )
      .optional(),
    usage: RunUsageSchema.optional(),
    acceptance: z
      .object({ decision: z.enum(["accepted", "rejected"]), by: ActorSchema, note: z.string(), at: epochMs() })
      .optional(),
    ...RUN_FLOW_FIELDS,
    createdAt: epochMs(),
    updatedAt: epochMs(),
  })
  .openapi("Run");

export const TransitionSchema = z
  .object({
    runId: z.string(),
    id: z.number().int().openapi({ description: "1, 2, 3 … per run, no gaps" }),
    at: epochMs(),
    actor: ActorSchema,
    from: RunStateSchema.nullable(),
    to: RunStateSchema,
    pausedReason: PausedReasonSchema.nullable(),
    reason: z.string(),
    versions: VersionsSchema,
  })
  .openapi("Transition");

export const EffectSchema = z
  .object({
    id: z.string().openapi({ description: "`e<seq>`: what reconcile names" }),
    namespace: z.string(),
    idempotencyKey: z.string(),
    status: z.enum(["intended", "applied", "not_applied", "unknown"]),
    intentAt: epochMs(),
    receipt: json().optional(),
    settledBy: z.enum(["attempt", "status", "reconcile"]).optional(),
    settledAt: epochMs().optional(),
    unknown: z.string().optional(),
    reconciliation: z
      .object({
        outcome: z.enum(["applied", "not_applied"]),
        by: ActorSchema,
        at: epochMs(),
        note: z.string().optional(),
      })
      .optional(),
    compensate: z.string().nullable(),
    compensates: z.number().int().optional(),
  })
  .openapi("Effect");

export const StepSchema = z
  .object({
    runId: z.string(),
    seq: z.number().int(),
    kind: z.enum(["tool", "domain", "llm", "value", "wait", "child", "marker", "sandbox"]),
    name: z.string(),
    status: z.enum(["started", "completed", "failed"]),
    argsDigest: z.string(),
    args: json().optional(),
    result: json().optional(),
    error: SerializedErrorSchema.optional(),
    attempts: z.array(
      z.object({
        attempt: z.number().int(),
        startedAt: epochMs(),
        endedAt: epochMs().nullable(),
        error: SerializedErrorSchema.optional(),
        restored: z
          .object({
            name: z.string(),
            lost: z.string().nullable(),
            id: z.string(),
            snapshot: z.string(),
            at: epochMs(),
          })
          .optional(),
      }),
    ),
    heartbeat: json().optional(),
    usage: z
      .object({
        inputTokens: z.number(),
        outputTokens: z.number(),
        modelCalls: z.number(),
        costUsd: z.number().optional(),
      })
      .optional(),
    effect: EffectSchema.optional(),
    startedAt: epochMs(),
    endedAt: epochMs().nullable(),
    epoch: z.number().int(),
  })
  .openapi("Step");

export const WaitSchema = z
  .object({
    runId: z.string(),
    id: z.string().openapi({ description: "`w<seq>`, or `r<seq>.<attempt>` for a retry backoff" }),
    seq: z.number().int(),
    kind: z.enum(["signal", "user", "timer", "approval", "child", "retry"]),
    name: z.string(),
    status: z.enum(["open", "resolved", "closed"]),
    details: json().openapi({
      description:
        "per kind: user { question, schema? }; approval { action, payload, digest, approvers } (expiry is dueAt); child { childRunId }; retry { attempt }; timer { ms? }",
    }),
    dueAt: epochMs().nullable(),
    resolution: z
      .object({
        outcome: z.string(),
        value: json().optional(),
        by: ActorSchema.optional(),
        messageId: z.string().optional(),
        note: z.string().optional(),
        at: epochMs(),
      })
      .optional(),
    createdAt: epochMs(),
  })
  .openapi("Wait");

export const ErrorBodySchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ description: "a CairnErrorCode, or UNAUTHENTICATED, FORBIDDEN, MALFORMED_JSON, …" }),
      message: z.string(),
      details: json().optional(),
    }),
  })
  .openapi("Error");

// ── Requests ─────────────────────────────────────────────────────────────────────────────────

const BudgetSchema = z
  .strictObject({
    tokens: z.number().nonnegative().optional(),
    costUsd: z.number().nonnegative().optional(),
    modelCalls: z.number().nonnegative().optional(),
    toolCalls: z.number().nonnegative().optional(),
    steps: z.number().nonnegative().optional(),
    wallTimeMs: z.number().nonnegative().optional(),
  })
  .openapi("Budget");

/**
 * A caller's `meta`: an object of JSON values, kept as sent (a `__proto__` key included, which a
 * copying schema would drop), without the keys the runtime reads back.
 */
const MetaSchema = z
  .custom<Record<string, unknown>>(isObject, { message: "meta must be an object of JSON values" })
  .superRefine((meta, ctx) => {
    const problem = reservedMetaProblem(meta);
    if (problem) ctx.addIssue({ code: "custom", path: [problem.key], message: problem.message });
  })
  .openapi({
    type: "object",
    additionalProperties: true,
    description: `data kept with the run; the keys ${RESERVED_META_KEYS.join(", ")} are reserved (use budget, compensate and job; the module is never taken from a request)`,
  });

/**
 * What a start takes: these fields and no other (400 naming an unknown one). `budget` and
 * `compensate` may only tighten what the agent's author declared unless the caller is admin
 * (action-handlers.ts has the rule; 403 FORBIDDEN naming the field).
 */
export const StartRunBody = z
  .strictObject({
    agent: text("the agent's name"),
    workflow: text("the workflow's name"),
    input: json()
      .optional()
      .openapi({ description: "the workflow's input (any JSON value); default {}, as `cairn run`" }),
    key: text("idempotency key: starting again returns that run", { max: 1000 }).optional(),
    budget: BudgetSchema.optional().openapi({
      description:
        "caps of this run over the agent's; above a cap the agent declares only for admin (lower caps, and caps the agent has none of, for any operator)",
    }),
    compensate: z.enum(["never", "on_failure", "on_failure_or_cancel"]).optional().openapi({
      description: "when the run undoes its applied effects; other than the agent's declared mode only for admin",
    }),
    meta: MetaSchema.optional(),
    ...startFlowFields(text),
    job: z
      .strictObject({
        objective: z.string().optional(),
        jobId: z.string().optional(),
        acceptanceRule: z.string().optional(),
        owner: z.string().optional(),
        authority: z.string().optional(),
      })
      .optional(),
  })
  .openapi("StartRun");

export const SignalBody = z
  .strictObject({
    name: text("the signal's name"),
    payload: json().optional(),
    messageId: text("de-duplicates deliveries", { max: 1000 }).optional(),
  })
  .openapi("Signal");

export const AnswerBody = z
  .strictObject({ value: json() })
  .refine((body) => "value" in body, { message: "an answer needs `value`", path: ["value"] })
  .openapi("Answer");

export const DecisionBody = z
  .strictObject({
    digest: text("the digest of the payload decided on (the wait's details.digest)", { max: 200 }),
    note: text("why", { allowEmpty: true }).optional(),
  })
  .openapi("Decision");

export const CancelBody = z
  .strictObject({ reason: text("why the run is cancelled", { allowEmpty: true }).optional() })
  .openapi("Cancel");

export const EmptyBody = z.strictObject({}).openapi("Empty");

/** What a fork takes: the first step to run again, and the new run's input (default: the source's). */
export const ForkBody = z
  .strictObject({
    fromStep: z.number().int().min(1).openapi({ description: "the source's steps before it are kept" }),
    input: json().optional(),
  })
  .openapi("Fork");
export const ImportBody = z.record(z.string(), z.unknown()).openapi("RunContractBody", {
  description: "a run contract as `GET /api/runs/:id/contract` or `cairn export` gives it",
});

export const MoveBody = z
  .strictObject({ to: text("where the run goes, kept in its MOVED record (no credentials)").optional() })
  .openapi("Move");

export const ReconcileBody = z
  .strictObject({
    outcome: z.enum(["applied", "not_applied"]),
    result: json().optional(),
    receipt: json().optional(),
    note: text("how the outcome was found out", { allowEmpty: true }).optional(),
  })
  .openapi("Reconcile");

export const VerdictBody = z.strictObject({ note: text("why", { allowEmpty: true }).optional() }).openapi("Verdict");

export const RunParams = z.object({
  id: text("the run's id").openapi({ param: { name: "id", in: "path" } }),
});
export const WaitParams = RunParams.extend({
  waitId: text("the wait's id").openapi({ param: { name: "waitId", in: "path" } }),
});
export const EffectParams = RunParams.extend({
  effectId: text("the effect's id").openapi({ param: { name: "effectId", in: "path" } }),
});

const queryInt = (description: string) =>
  z.coerce.number().int().nonnegative().optional().openapi({ type: "integer", description });

export const ListRunsQuery = z.object({
  agent: text("only runs of this agent").optional(),
  workflow: text("only runs of this workflow").optional(),
  state: z
    .string()
    .optional()
    .openapi({ description: `comma-separated states (${RUN_STATES.join(", ")})`, example: "PAUSED,RUNNING" }),
  pausedReason: PausedReasonSchema.optional(),
  key: text("only runs started with this idempotency key").optional(),
  since: queryInt("only runs created at or after (epoch ms)"),
  until: queryInt("only runs created at or before (epoch ms)"),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(200)
    .optional()
    .openapi({ type: "integer", description: "1..200, default 50" }),
  cursor: z.string().optional().openapi({ description: "the nextCursor of the previous page" }),
});

export const EventsQuery = z.object({
  from: z.string().optional().openapi({ description: "an event id to resume after (as Last-Event-ID)" }),
});
