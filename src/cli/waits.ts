import type { Json, RunRecord, SignalRecord, WaitRecord, WaitResolution } from "../core/records.ts";
import { clock, dateTime, due, json, jsonLine, shellWord, truncate, WIDTH } from "./format.ts";

/**
 * How the CLI describes what a run waits for: one line per open wait (`cairn runs`, `cairn run`),
 * a table of every wait with the details and command lines to act on the open ones (`cairn show`).
 */

/** The wait's details as `requestApproval` stores them. */
interface ApprovalDetails {
  action?: string;
  payload?: Json;
  digest?: string;
  approvers?: string[];
}

/** The wait's details as `askUser` stores them. */
interface QuestionDetails {
  question?: string;
  schema?: Json | null;
}

function fields<T>(wait: WaitRecord): T {
  return (wait.details && typeof wait.details === "object" && !Array.isArray(wait.details) ? wait.details : {}) as T;
}

/** What kind of thing the wait is, in the words the CLI uses. */
export function waitKindLabel(wait: WaitRecord): string {
  return wait.kind === "user" ? "question" : wait.kind;
}

/** What the wait waits on: the question, the action, the signal name, the child run, … */
export function waitSubject(wait: WaitRecord): string {
  switch (wait.kind) {
    case "user":
      return JSON.stringify(fields<QuestionDetails>(wait).question ?? wait.name);
    case "approval":
      return `"${wait.name}"`;
    case "signal":
      return `"${wait.name}"`;
    case "timer": {
      const { ms, until } = fields<{ ms?: number; until?: number }>(wait);
      if (typeof ms === "number") return `sleep ${span(ms)}`;
      return typeof until === "number" ? `sleep until ${dateTime(until)}` : "sleep";
    }
    case "child":
      return `run ${wait.name}`;
    case "retry": {
      const { attempt, stepKind } = fields<{ attempt?: number; stepKind?: string }>(wait);
      return `of ${stepKindLabel(stepKind)} "${wait.name}"${typeof attempt === "number" ? `, attempt ${attempt}` : ""}`;
    }
  }
}

/** What a step of `kind` is called in lines: `model call` for `llm`; `step` when unknown (older records). */
export function stepKindLabel(kind: string | undefined): string {
  if (kind === undefined) return "step";
  return kind === "llm" ? "model call" : kind;
}

/** `250 ms`, `30s`, `5m`, `1h 30m`, `2d 3h`. */
export function span(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  const s = Math.round(ms / 1000);
  const [d, h, m] = [Math.floor(s / 86_400), Math.floor((s % 86_400) / 3600), Math.floor((s % 3600) / 60)];
  if (d > 0) return h > 0 ? `${d}d ${h}h` : `${d}d`;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  if (m > 0) return s % 60 > 0 ? `${m}m ${s % 60}s` : `${m}m`;
  return `${s}s`;
}

/** When an open wait comes due, in words (`expires …`, `due …`, `times out …`), or "". */
export function dueLabel(wait: WaitRecord, now = Date.now()): string {
  if (wait.dueAt === null) return "";
  const when = due(wait.dueAt, now);
  switch (wait.kind) {
    case "approval":
      return `expires ${when}`;
    case "timer":
    case "retry":
      return `due ${when}`;
    default:
      return `times out ${when}`;
  }
}

/**
 * One short line for an open wait: `approval "pay_expense" (w2): approvers alice; expires
 * 2026-07-02 14:03:09 (in 23h)`. `childState` is the state of a child run, when known.
 */
export function waitLine(wait: WaitRecord, now = Date.now(), childState?: string): string {
  const parts: string[] = [];
  // A timer is named by what it does: `timer (w1): sleep 1h; due …`.
  const subject = wait.kind === "timer" ? "" : ` ${waitSubject(wait)}`;
  if (wait.kind === "timer") parts.push(waitSubject(wait));
  if (wait.kind === "approval") {
    const approvers = fields<ApprovalDetails>(wait).approvers ?? [];
    parts.push(approvers.length ? `approvers ${approvers.join(", ")}` : "anyone may decide");
  }
  if (wait.kind === "child" && childState) parts.push(`the child is ${childState}`);
  const dueText = dueLabel(wait, now);
  if (dueText) parts.push(dueText);
  return `${waitKindLabel(wait)}${subject} (${wait.id})${parts.length ? `: ${parts.join("; ")}` : ""}`;
}

/** How a resolved or closed wait ended: `answered "CC-42" by user bob at 14:03:09.120`. */
export function outcomeLabel(resolution: WaitResolution | undefined, status: WaitRecord["status"]): string {
  if (!resolution) return status === "closed" ? "closed (the run ended first)" : "—";
  const by = resolution.by ? ` by ${resolution.by.kind} ${resolution.by.id}` : "";
  const at = ` at ${clock(resolution.at)}`;
  switch (resolution.outcome) {
    case "answered":
      return `answered ${jsonLine(resolution.value, 40)}${by}${at}`;
    case "signalled":
      return `signalled ${jsonLine(resolution.value, 40)}${resolution.messageId ? ` (message ${resolution.messageId})` : ""}${by}${at}`;
    case "approved":
    case "denied":
      return `${resolution.outcome}${by}${at}${resolution.note ? `: ${resolution.note}` : ""}`;
    case "child_ended": {
      const ending = (resolution.value ?? {}) as { state?: string };
      return `the child ended ${ending.state ?? "—"}${at}`;
    }
    case "timed_out":
      return `timed out${at}`;
    case "closed":
      return `closed (the run ended first)${at}`;
    default:
      return `${resolution.outcome}${at}`;
  }
}

/**
 * The command lines that act on an open wait, ready to copy: `cairn answer …`, `cairn approve …`
 * and `cairn deny …`, `cairn signal …`. `hint` is the database options the user typed.
 */
export function waitCommands(run: Pick<RunRecord, "id">, wait: WaitRecord, hint: string): [string, string][] {
  const target = `${run.id} ${shellWord(wait.id)}`;
  switch (wait.kind) {
    case "user": {
      const schema = fields<QuestionDetails>(wait).schema;
      const isText = !!schema && typeof schema === "object" && !Array.isArray(schema) && schema.type === "string";
      return [["answer", `cairn answer ${target} ${isText ? "'<text>'" : "'<json>'"}${hint}`]];
    }
    case "approval": {
      const { approvers = [], digest = "<digest>" } = fields<ApprovalDetails>(wait);
      const by = approvers.length === 1 && approvers[0] ? shellWord(approvers[0]) : "<who>";
      const options = `--by ${by} --digest ${shellWord(digest)}`;
      return [
        ["approve", `cairn approve ${target} ${options}${hint}`],
        ["deny", `cairn deny ${target} ${options}${hint}`],
      ];
    }
    case "signal":
      return [["send", `cairn signal ${run.id} ${shellWord(wait.name)} --payload '<json>'${hint}`]];
    default:
      return [];
  }
}

/**
 * Detail lines under an open wait in `cairn show`: an approval's payload, digest and approvers;
 * a question's schema; then the command lines (never wrapped, so that they copy whole).
 */
export function openWaitDetails(run: Pick<RunRecord, "id">, wait: WaitRecord, hint: string): string[] {
  const lines: string[] = [];
  const field = (name: string, value: string) => {
    const [first = "", ...rest] = value.split("\n");
    lines.push(`${name.padEnd(10)} ${first}`);
    for (const line of rest) lines.push(`${" ".repeat(11)}${line}`);
  };
  if (wait.kind === "approval") {
    const { payload = null, digest, approvers = [] } = fields<ApprovalDetails>(wait);
    field("payload", json(payload));
    field("digest", digest ?? "—");
    field("approvers", approvers.length ? approvers.join(", ") : "anyone (the approval names no approvers)");
  } else if (wait.kind === "user") {
    const { schema } = fields<QuestionDetails>(wait);
    field(
      "schema",
      schema ? compactJson(withoutDialect(schema)) : "none: any JSON value (text that is not JSON is a string)",
    );
  }
  for (const [name, command] of waitCommands(run, wait, hint)) field(name, command);
  return lines;
}

/** A JSON Schema without its `$schema` (which dialect it is written in tells a person nothing). */
function withoutDialect(schema: Json): Json {
  if (!schema || typeof schema !== "object" || Array.isArray(schema)) return schema;
  const { $schema: _, ...rest } = schema;
  return rest;
}

/** One line when short, else indented JSON. */
function compactJson(value: Json): string {
  const line = JSON.stringify(value);
  return line.length <= WIDTH - 20 ? line : json(value);
}

/** `inbox: 2 signals not consumed yet: "done" (message d1, 14:03:10.000), …`, or nothing when the inbox is empty. */
export function inboxLines(signals: readonly SignalRecord[]): string[] {
  const waiting = signals.filter((s) => s.consumedBy === null);
  if (waiting.length === 0) return [];
  const shown = waiting.slice(0, 5).map((s) => `"${s.name}" (message ${s.messageId}, ${clock(s.receivedAt)})`);
  const more = waiting.length > shown.length ? `, and ${waiting.length - shown.length} more` : "";
  return [
    truncate(
      `inbox: ${waiting.length} signal${waiting.length === 1 ? "" : "s"} not consumed yet: ${shown.join(", ")}${more}`,
      WIDTH * 2,
    ),
  ];
}

/**
 * What a PAUSED run waits on, one line each, led by `lead`: its open waits, or, for a suspended
 * orphan, what to do with it. `childStates` maps child run ids to their states.
 */
export function pausedLines(
  run: RunRecord,
  waits: readonly WaitRecord[],
  options: { lead?: string; childStates?: ReadonlyMap<string, string>; now?: number } = {},
): string[] {
  const lead = options.lead ?? "  ↳ ";
  const now = options.now ?? Date.now();
  const width = WIDTH - lead.length;
  if (run.pausedReason === "suspended_orphan") {
    const parent = run.parentRunId ? ` run ${run.parentRunId}` : "";
    return [
      `${lead}${truncate(`suspended: its parent${parent} ended first; \`cairn resume ${run.id}\` continues it, \`cairn cancel ${run.id}\` ends it`, width)}`,
    ];
  }
  const open = waits.filter((w) => w.status === "open");
  if (open.length === 0) return [`${lead}nothing open: it resumes when a worker picks it up`];
  return open.map((w) => `${lead}${truncate(waitLine(w, now, options.childStates?.get(w.name)), width)}`);
}

/** Child run ids that open child waits name. */
export function childRunIds(waits: readonly WaitRecord[]): string[] {
  return waits.filter((w) => w.kind === "child" && w.status === "open").map((w) => w.name);
}
