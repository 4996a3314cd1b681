import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { ResolveWaitResult, RuntimeBackend, SignalResult } from "../backend/backend.ts";
import {
  ApprovalRefusedError,
  InvalidInputError,
  RunNotOpenError,
  WaitClosedError,
  WaitNotFoundError,
} from "../core/errors.ts";
import type { Actor, Json, RunRecord, TransitionRecord, Versions, WaitRecord } from "../core/records.ts";
import { isTerminal } from "../core/run-state.ts";
import { toJson } from "../core/serialize.ts";
import { describeWait } from "../core/wait-description.ts";

/**
 * The client operations on waits — signal, answer, approve, deny — and on stops — cancel —
 * shared by the runtime (and, through it, the CLI and the server). Each is one backend
 * transaction; the rules that refuse a bad answer or decision run inside it.
 */

/** What the operations need from the runtime. */
export interface WaitOperationsHost {
  backend: RuntimeBackend;
  versions(run: RunRecord): Versions;
  now(): number;
  /** Bytes of JSON text a signal's payload or an answer may take (`PayloadTooLargeError` above). */
  maxPayloadBytes: number;
  /** Unread signals a run's inbox may hold (`SignalInboxFullError` above). */
  maxUnreadSignals: number;
  getRun(runId: string): Promise<RunRecord>;
  /** Tells listeners and the worker about transitions the operation made. */
  emit(transitions: readonly TransitionRecord[], run: RunRecord): void;
}

/** Options of `signal`. */
export interface SignalOptions {
  /** De-duplicates deliveries: a second signal with the same id is acknowledged, not delivered. @default a random id */
  messageId?: string;
  /** @default { kind: "user", id: "local" } */
  by?: Actor;
}

/** Options of an approve or deny. */
export interface DecisionOptions {
  /** Who decides: must be one of the approval's approvers when it lists any. */
  by: Actor | string;
  /** The digest of the payload the decider saw (`approvalDigest`); a different one is refused. */
  digest: string;
  note?: string;
}

const LOCAL: Actor = { kind: "user", id: "local" };

function actorOf(by: Actor | string | undefined): Actor | undefined {
  if (by === undefined) return undefined;
  return typeof by === "string" ? { kind: "user", id: by } : by;
}

/** Sends a signal to a run (see `RuntimeBackend.deliverSignal`). */
export async function sendSignal(
  host: WaitOperationsHost,
  runId: string,
  name: string,
  payload: unknown,
  options: SignalOptions = {},
): Promise<SignalResult> {
  const run = await host.getRun(runId);
  const result = await host.backend.deliverSignal({
    runId,
    name,
    payload: toJson(payload ?? null, `the payload of signal "${name}" to run ${runId}`, host.maxPayloadBytes) ?? null,
    messageId: options.messageId ?? randomUUID(),
    actor: options.by ?? LOCAL,
    versions: host.versions(run),
    at: host.now(),
    maxUnread: host.maxUnreadSignals,
  });
  if (result.transition) host.emit([result.transition], result.run);
  return result;
}

/** Answers a question asked with `ctx.askUser`; the answer must match its schema. */
export async function answerQuestion(
  host: WaitOperationsHost,
  runId: string,
  waitId: string,
  value: unknown,
  options: { by?: Actor | string } = {},
): Promise<ResolveWaitResult> {
  const by = actorOf(options.by) ?? LOCAL;
  const answer = toJson(value ?? null, `the answer to ${waitId} of run ${runId}`, host.maxPayloadBytes) ?? null;
  const now = host.now();
  return resolve(
    host,
    runId,
    waitId,
    by,
    (wait) => {
      if (wait.kind !== "user") throw notA(wait, "question", runId);
      const details = wait.details as { question: string; schema: Json | null };
      if (wait.dueAt !== null && wait.dueAt <= now) {
        throw new WaitClosedError(
          `question ${JSON.stringify(details.question)} (${waitId}) of run ${runId} timed out at ${new Date(wait.dueAt).toISOString()}; it takes no answer now`,
        );
      }
      if (details.schema !== null && typeof details.schema === "object") {
        const parsed = z.fromJSONSchema(details.schema as never).safeParse(answer);
        if (!parsed.success) {
          const issues = parsed.error.issues.map((i) => {
            const path = i.path as (string | number)[];
            // zod's own messages do not survive JSON Schema; a field's `.describe()` does.
            const hint = describedAt(details.schema, path);
            return { path, message: hint ? `${i.message} (${hint})` : i.message };
          });
          const detail = issues.map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`).join("; ");
          throw new InvalidInputError(
            `answer to ${JSON.stringify(details.question)} (run ${runId}, ${waitId}) refused: ${detail}. The run keeps waiting; answer again with a value that matches the question's schema`,
            issues,
          );
        }
      }
      return { outcome: "answered", value: answer, by };
    },
    `answered by ${by.kind} ${by.id}`,
  );
}

/** Approves or denies an approval requested with `ctx.requestApproval` (or a tool that needs one). */
export async function decideApproval(
  host: WaitOperationsHost,
  runId: string,
  approvalId: string,
  decision: "approved" | "denied",
  options: DecisionOptions,
): Promise<ResolveWaitResult> {
  const by = actorOf(options?.by);
  if (!by?.id) {
    throw new ApprovalRefusedError(
      `${decision === "approved" ? "approve" : "deny"} needs the decider's identity ({ by: "alice" }); nothing was decided`,
      "no_decider",
    );
  }
  const now = host.now();
  return resolve(
    host,
    runId,
    approvalId,
    by,
    (wait) => {
      if (wait.kind !== "approval") throw notA(wait, "approval", runId);
      const details = wait.details as { action: string; digest: string; approvers: string[] };
      if (wait.dueAt !== null && wait.dueAt <= now) {
        throw new ApprovalRefusedError(
          `approval "${details.action}" (${approvalId}) of run ${runId} expired at ${new Date(wait.dueAt).toISOString()}; it can no longer be ${decision}`,
          "expired",
        );
      }
      if (details.approvers.length > 0 && !details.approvers.includes(by.id)) {
        throw new ApprovalRefusedError(
          `${by.id} may not decide approval "${details.action}" (${approvalId}); its approvers are ${details.approvers.join(", ")}`,
          "not_an_approver",
        );
      }
      if (options.digest !== details.digest) {
        throw new ApprovalRefusedError(
          `the digest given for approval "${details.action}" (${approvalId}) is not the digest of its payload; look at the payload again (\`cairn show ${runId}\`) and decide on what it says`,
          "wrong_digest",
        );
      }
      return options.note === undefined ? { outcome: decision, by } : { outcome: decision, by, note: options.note };
    },
    `approval ${approvalId} ${decision} by ${by.kind} ${by.id}`,
  );
}

async function resolve(
  host: WaitOperationsHost,
  runId: string,
  waitId: string,
  by: Actor,
  decide: (wait: WaitRecord) => ReturnType<Parameters<RuntimeBackend["resolveWait"]>[0]["decide"]>,
  reason: string,
): Promise<ResolveWaitResult> {
  const run = await host.getRun(runId);
  // An interrupted run keeps its waits open: it is resumed, and finds the answer then.
  if (isTerminal(run.state) && run.state !== "INTERRUPTED") {
    const moved = run.state === "MOVED" ? ` (${run.error?.message ?? "moved to another store"})` : "";
    throw new RunNotOpenError(`run ${runId} is ${run.state}; its waits are closed${moved}`);
  }
  const result = await host.backend.resolveWait({
    runId,
    waitId,
    decide,
    actor: by,
    reason,
    versions: host.versions(run),
    at: host.now(),
  });
  if (result.transition) host.emit([result.transition], result.run);
  return result;
}

/** The `description` of the schema node at `path`, if it has one. */
function describedAt(schema: Json, path: readonly (string | number)[]): string | undefined {
  let node: Json | undefined = schema;
  for (const key of path) {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
    const next: Json | undefined =
      typeof key === "number"
        ? (node.items as Json | undefined)
        : (node.properties as Record<string, Json> | undefined)?.[key];
    node = next;
  }
  if (node === null || typeof node !== "object" || Array.isArray(node)) return undefined;
  return typeof node.description === "string" ? node.description : undefined;
}

function notA(wait: WaitRecord, what: string, runId: string): WaitNotFoundError {
  return new WaitNotFoundError(`${wait.id} of run ${runId} is not a ${what}: it is a ${describeWait(wait)}`);
}

/** Cancels a run from any state that is not terminal (see `RuntimeBackend.requestStop`). */
export async function cancelRun(
  host: WaitOperationsHost,
  runId: string,
  options: { by?: Actor | string; reason?: string } = {},
): Promise<RunRecord> {
  const run = await host.getRun(runId);
  if (isTerminal(run.state) && run.state !== "INTERRUPTED") {
    throw new RunNotOpenError(`run ${runId} is ${run.state}; there is nothing to cancel`);
  }
  const by = actorOf(options.by) ?? LOCAL;
  const result = await host.backend.requestStop({
    runId,
    request: { kind: "cancel", by, reason: options.reason ?? "no reason given", at: host.now() },
    versions: host.versions(run),
  });
  host.emit(result.transitions, result.run);
  return result.run;
}
