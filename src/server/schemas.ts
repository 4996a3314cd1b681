import { z } from "@hono/zod-openapi";
import { PAUSED_REASONS, RUN_STATES } from "../core/run-state.ts";
import { ROLES } from "./auth.ts";

/**
 * The zod schemas of the HTTP API: request bodies, parameters and queries (validated), and the
 * records the responses carry (documented in /openapi.json; the records are those of
 * `core/records.ts` as stored, timestamps in epoch milliseconds). Request bodies are strict: an
 * unknown field — `by` or `actor` included, since who acts comes from the token — is refused.
 */

const json = () => z.unknown().openapi({ description: "any JSON value" });
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
    usage: RunUsageSchema.optional(),
    acceptance: z
      .object({ decision: z.enum(["accepted", "rejected"]), by: ActorSchema, note: z.string(), at: epochMs() })
      .optional(),
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
    kind: z.enum(["tool", "domain", "llm", "value", "wait", "child", "marker"]),
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

export const StartRunBody = z
  .strictObject({
    agent: z.string().min(1),
    workflow: z.string().min(1),
    input: json(),
    key: z
      .string()
      .min(1)
      .max(1000)
      .optional()
      .openapi({ description: "idempotency key: starting again returns that run" }),
    budget: BudgetSchema.optional(),
    meta: z.record(z.string(), z.unknown()).optional(),
    job: z
      .strictObject({
        objective: z.string().optional(),
        acceptanceRule: z.string().optional(),
        owner: z.string().optional(),
        authority: z.string().optional(),
      })
      .optional(),
  })
  .openapi("StartRun");

export const SignalBody = z
  .strictObject({
    name: z.string().min(1),
    payload: json().optional(),
    messageId: z.string().min(1).max(1000).optional().openapi({ description: "de-duplicates deliveries" }),
  })
  .openapi("Signal");

export const AnswerBody = z
  .strictObject({ value: json() })
  .refine((body) => "value" in body, { message: "an answer needs `value`", path: ["value"] })
  .openapi("Answer");

export const DecisionBody = z
  .strictObject({
    digest: z
      .string()
      .min(1)
      .openapi({ description: "the digest of the payload decided on (the wait's details.digest)" }),
    note: z.string().optional(),
  })
  .openapi("Decision");

export const CancelBody = z.strictObject({ reason: z.string().optional() }).openapi("Cancel");

export const EmptyBody = z.strictObject({}).openapi("Empty");

export const ReconcileBody = z
  .strictObject({
    outcome: z.enum(["applied", "not_applied"]),
    result: json().optional(),
    receipt: json().optional(),
    note: z.string().optional(),
  })
  .openapi("Reconcile");

export const VerdictBody = z.strictObject({ note: z.string().optional() }).openapi("Verdict");

export const RunParams = z.object({
  id: z
    .string()
    .min(1)
    .openapi({ param: { name: "id", in: "path" } }),
});
export const WaitParams = RunParams.extend({
  waitId: z
    .string()
    .min(1)
    .openapi({ param: { name: "waitId", in: "path" } }),
});
export const EffectParams = RunParams.extend({
  effectId: z
    .string()
    .min(1)
    .openapi({ param: { name: "effectId", in: "path" } }),
});

const queryInt = (description: string) =>
  z.coerce.number().int().nonnegative().optional().openapi({ type: "integer", description });

export const ListRunsQuery = z.object({
  agent: z.string().optional(),
  workflow: z.string().optional(),
  state: z
    .string()
    .optional()
    .openapi({ description: `comma-separated states (${RUN_STATES.join(", ")})`, example: "PAUSED,RUNNING" }),
  pausedReason: PausedReasonSchema.optional(),
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
  access_token: z
    .string()
    .optional()
    .openapi({ description: "the bearer token, for clients that cannot send headers (EventSource)" }),
});

export const MeSchema = z
  .object({ subject: z.string(), roles: z.array(z.enum(ROLES)), auth: z.enum(["token", "none"]) })
  .openapi("Me");

export const AgentSchema = z
  .object({ name: z.string(), description: z.string(), version: z.string(), workflows: z.array(z.string()) })
  .openapi("Agent");
