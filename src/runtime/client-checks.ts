import type { RunFilter } from "../backend/backend.ts";
import { InvalidInputError } from "../core/errors.ts";
import type { Actor } from "../core/records.ts";
import { RUN_STATES, type RunState } from "../core/run-state.ts";
import { checkOptionalText, checkText } from "../core/text.ts";
import type { VerdictOptions } from "./contract-operations.ts";
import type { StartOptions } from "./runtime-options.ts";

/**
 * The checks of what a client call hands the runtime (DESIGN §2, *Settled — client input*): ids,
 * keys, names, reasons, notes, actors and list filters. Each refuses a bad value with
 * `InvalidInputError` naming the field, before anything is read or written, so a bad value gets
 * the same answer on every backend (a NUL in a key, say, is refused here rather than by
 * PostgreSQL alone, and a lone surrogate is refused rather than turned into U+FFFD by both SQL
 * drivers, which would make two keys one).
 */

/** Longest run id, wait id or effect id a call takes. */
export const MAX_ID_LENGTH = 256;
/**
 * Longest run key, signal name or message id. Keys sit in a unique index, and PostgreSQL's index
 * rows hold about 2,700 bytes: 512 characters of up to 4 bytes each stay within it on every backend.
 */
export const MAX_NAME_LENGTH = 512;
/** Longest reason or note. */
export const MAX_NOTE_LENGTH = 4096;

/** A run id (or the id of a wait or an effect) named by a client call. */
export function checkId(value: unknown, field = "run id"): string {
  return checkText(value, field, { maxLength: MAX_ID_LENGTH });
}

/** A run key, signal name, message id, agent or workflow name. */
export function checkName(value: unknown, field: string): string {
  return checkText(value, field, { maxLength: MAX_NAME_LENGTH });
}

/** An optional key or name. */
export function checkOptionalName(value: unknown, field: string): string | undefined {
  return checkOptionalText(value, field, { maxLength: MAX_NAME_LENGTH });
}

/** An optional reason or note (may be empty). */
export function checkNote(value: unknown, field: string): string | undefined {
  return checkOptionalText(value, field, { maxLength: MAX_NOTE_LENGTH, allowEmpty: true });
}

const ACTOR_KINDS: ReadonlySet<string> = new Set(["worker", "user", "system", "policy"]);

/** Who acts: a name (a user) or an actor; undefined passes. */
export function checkActor(value: unknown, field = "by"): Actor | string | undefined {
  if (value === undefined || typeof value === "string") return checkOptionalName(value, field);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new InvalidInputError(`${field} must be a name or { kind, id } (got ${describe(value)})`, [
      { path: [field], message: "not an actor" },
    ]);
  }
  const { kind, id } = value as { kind?: unknown; id?: unknown };
  if (typeof kind !== "string" || !ACTOR_KINDS.has(kind)) {
    throw new InvalidInputError(
      `${field}.kind must be "worker", "user", "system" or "policy" (got ${describe(kind)})`,
      [{ path: [field, "kind"], message: "unknown kind" }],
    );
  }
  checkName(id, `${field}.id`);
  return { kind: kind as Actor["kind"], id: id as string };
}

/** What `run` takes besides the input and `meta` (which `startMeta` checks): a text key, an actor. */
export function checkStartOptions(options: StartOptions): void {
  if (options === null || typeof options !== "object") {
    throw new InvalidInputError(`the options of run must be an object (got ${describe(options)})`);
  }
  checkOptionalName(options.key, "key");
  checkActor(options.by);
  for (const header of ["traceparent", "tracestate"] as const) {
    if (options[header] !== undefined && typeof options[header] !== "string") {
      throw new InvalidInputError(`${header} must be a W3C ${header} header's text (got ${describe(options[header])})`);
    }
  }
}

/** What `accept` and `reject` take: who and why. */
export function checkVerdict(options: VerdictOptions): void {
  checkActor(options?.by);
  checkNote(options?.note, "note");
}

/** The filter of `listRuns`: known states, text names, whole-number limit and offset. */
export function checkRunFilter(filter: unknown): RunFilter {
  if (filter === undefined) return {};
  if (filter === null || typeof filter !== "object" || Array.isArray(filter)) {
    throw new InvalidInputError(`the run filter must be an object (got ${describe(filter)})`);
  }
  const f = filter as RunFilter;
  checkOptionalName(f.agent, "filter.agent");
  checkOptionalName(f.workflow, "filter.workflow");
  if (f.parentRunId !== undefined) checkId(f.parentRunId, "filter.parentRunId");
  const states: readonly unknown[] = f.state === undefined ? [] : Array.isArray(f.state) ? f.state : [f.state];
  for (const state of states) {
    if (typeof state !== "string" || !RUN_STATES.includes(state as RunState)) {
      throw new InvalidInputError(
        `filter.state ${describe(state)} is not a run state (known: ${RUN_STATES.join(", ")})`,
        [{ path: ["filter", "state"], message: "unknown state" }],
      );
    }
  }
  wholeNumber(f.limit, "filter.limit", 1);
  wholeNumber(f.offset, "filter.offset", 0);
  return f;
}

function wholeNumber(value: unknown, field: string, min: number): void {
  if (value === undefined) return;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min) {
    throw new InvalidInputError(`${field} must be a whole number, at least ${min} (got ${describe(value)})`, [
      { path: field.split("."), message: `not a whole number >= ${min}` },
    ]);
  }
}

function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : typeof value;
}

/** The arguments of `approve` and `deny`. */
export function checkDecision(
  runId: string,
  approvalId: string,
  options: { by?: unknown; digest?: unknown; note?: unknown } | undefined,
): void {
  checkId(runId);
  checkId(approvalId, "approval id");
  checkActor(options?.by);
  checkNote(options?.digest, "digest");
  checkNote(options?.note, "note");
}

/** The arguments of `signal`. */
export function checkSignal(runId: string, name: string, options: { messageId?: unknown; by?: unknown }): void {
  checkId(runId);
  checkName(name, "signal name");
  checkOptionalName(options.messageId, "messageId");
  checkActor(options.by);
}

/** The arguments of `reconcile`. */
export function checkReconcile(
  runId: string,
  effectId: string,
  options: { by?: unknown; note?: unknown } | undefined,
): void {
  checkId(runId);
  checkId(effectId, "effect id");
  checkActor(options?.by);
  checkNote(options?.note, "note");
}

/** The run, the actor and the notes (reason, to …) of an action on a run. */
export function checkAction(runId: string, by: unknown, notes: Record<string, unknown> = {}): void {
  checkId(runId);
  checkActor(by);
  for (const [field, value] of Object.entries(notes)) checkNote(value, field);
}
