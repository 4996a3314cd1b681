import type { SerializedError } from "../../core/errors.ts";
import { slotWait } from "../../core/flow-control.ts";
import { historySize } from "../../core/history-meter.ts";
import type { Json, RunRecord, SignalRecord, StepRecord, WaitRecord } from "../../core/records.ts";
import { isSettled, isTerminal } from "../../core/run-state.ts";
import { formatBytes } from "../../core/serialize.ts";
import { isolationOf } from "../../runtime/run-contract-sandboxes.ts";
import type { RunLimits } from "../../runtime/run-limits.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import { printOutcome, TransitionPrinter } from "../follow.ts";
import {
  actorLabel,
  age,
  clock,
  dateTime,
  type Io,
  json,
  stateLabel,
  statePair,
  table,
  tableBlocks,
  WIDTH,
  wrap,
} from "../format.ts";
import { JournalProgress } from "../journal-progress.ts";
import { LiveProgress } from "../progress.ts";
import { sandboxLines } from "../sandbox-lines.ts";
import { dueLabel, inboxLines, openWaitDetails, outcomeLabel, waitKindLabel, waitSubject } from "../waits.ts";

/** `cairn show`: one run with its transitions and steps. */
export const showCommand: Command = {
  name: "show",
  summary: "show a run: its fields, transitions, steps and waits",
  usage: "cairn show <runId> [--follow] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "Steps: the attempts column counts every attempt, the started and ms columns describe the last one;",
    "earlier attempts that failed or were cut short by a crash are listed under their step.",
    "Waits: every question, approval, signal, timer, child and retry the run waited for, with how it",
    "ended. Under an open approval: its payload, digest, approvers and expiry, and the `cairn approve`",
    "and `cairn deny` command lines to copy; under an open question: its schema and `cairn answer`.",
    "Signals kept in the run's inbox (sent before anything waited for them) are counted under the waits.",
    "History and inbox: what the run holds against its limits (maxHistoryBytes, maxHistoryEvents, maxSteps,",
    "maxUnreadSignals; the defaults here: a worker whose runtimeOptions set others applies its own).",
    "--follow   then print its transitions and step attempts (started, ended, failed: the retries) as",
    "           they are recorded, whoever records them (a `cairn worker` elsewhere), until the run",
    "           settles: through pauses and through INTERRUPTED, which a",
    "           worker's recovery usually moves on; Ctrl-C stops following and leaves the run as it is.",
    "           Exit code 0 when the run COMPLETED, 1 otherwise.",
  ],
  positionals: ["runId"],
  options: { follow: { type: "boolean" }, ...DATABASE_OPTIONS },
  async run({ positionals: [runId = ""], values }, io) {
    const database = chooseDatabase(values);
    const runtime = cliRuntime(undefined, await database.open({ create: false }), "client");
    try {
      const { run, transitions, steps, waits } = await runtime.history(runId);
      const signals = await runtime.backend.listSignals(runId);
      printRun(io, run, await prunedRelatives(runtime, run));
      printLimits(io, run, steps, signals, runtime.limits);
      io.out();
      io.out(`transitions (${transitions.length})`);
      const transitionRows = transitions.map((t) => [
        String(t.id),
        clock(t.at),
        actorLabel(t.actor),
        statePair(t.from, t.pausedReason ? `${t.to} (${t.pausedReason})` : t.to),
        t.reason,
      ]);
      for (const line of table(["#", "TIME", "ACTOR", "FROM → TO", "REASON"], transitionRows)) io.out(line);
      io.out();
      io.out(`steps (${steps.length})`);
      if (steps.length === 0) io.out(isTerminal(run.state) ? "  none" : "  none yet");
      else printSteps(io, steps);
      printWaits(io, run, waits, signals, database.hint);
      for (const line of sandboxLines(isolationOf(run.id, steps))) io.out(line);
      if (values.follow !== true) return 0;
      io.out();
      const shown = { run, shownUpTo: transitions.at(-1)?.id ?? 0, steps };
      const followed = await followRun(io, runtime, shown, database.hint);
      return printOutcome(io, followed, database);
    } finally {
      await runtime.shutdown();
    }
  },
};

/** How often `--follow` reads the run's new transitions. */
const FOLLOW_MS = 250;

/**
 * Prints the run's transitions after the last one shown (`shownUpTo`), as they are recorded, until
 * it settles in a state other than INTERRUPTED; the run as it settled.
 */
async function followRun(
  io: Io,
  runtime: Runtime,
  { run: shown, shownUpTo, steps }: { run: RunRecord; shownUpTo: number; steps: StepRecord[] },
  hint: string,
): Promise<RunRecord> {
  const ended = (r: RunRecord) => isSettled(r.state) && r.state !== "INTERRUPTED";
  if (ended(shown)) return shown;
  io.out(
    `following ${shown.id}: its transitions and step attempts as they are recorded (Ctrl-C stops following, the run goes on)`,
  );
  // Step attempts as the journal records them: the process that drives the run may be another.
  const progress = new LiveProgress(io);
  const journal = new JournalProgress(steps);
  try {
    return await followTransitions(progress.io, runtime, { run: shown, shownUpTo }, hint, (read) => {
      for (const { event, startedAt } of journal.read(read)) progress.event(event, startedAt);
    });
  } finally {
    progress.close();
  }
}

/** Prints the run's transitions until it ends (see {@link followRun}); `onSteps` gets its steps at each read. */
async function followTransitions(
  io: Io,
  runtime: Runtime,
  { run: shown, shownUpTo }: { run: RunRecord; shownUpTo: number },
  hint: string,
  onSteps: (steps: StepRecord[]) => void,
): Promise<RunRecord> {
  const ended = (r: RunRecord) => isSettled(r.state) && r.state !== "INTERRUPTED";
  const printer = new TransitionPrinter(io, {
    onSteps,
    onPrinted(transition) {
      if (transition.to === "INTERRUPTED") {
        io.out(`  a worker's recovery usually resumes it; else: cairn resume ${shown.id}${hint}  (still following)`);
      }
    },
  });
  printer.follow(shown.id, shownUpTo);
  for (;;) {
    const run = await printer.catchUp(runtime, shown.id);
    // The run and its transitions are read apart: one more catch-up prints any transition that
    // led to the state read.
    if (ended(run)) {
      await printer.catchUp(runtime, shown.id);
      return run;
    }
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_MS));
  }
}

/** The waits section (left out for a run that never waited), then the inbox line. */
function printWaits(io: Io, run: RunRecord, waits: WaitRecord[], signals: SignalRecord[], hint: string): void {
  const inbox = inboxLines(signals);
  if (waits.length === 0 && inbox.length === 0) return;
  io.out();
  io.out(`waits (${waits.length})`);
  const now = Date.now();
  const rows = waits.map((w) => [
    w.id,
    waitKindLabel(w),
    w.status,
    `${waitSubject(w)}: ${w.status === "open" ? dueLabel(w, now) || "waiting" : outcomeLabel(w.resolution, w.status)}`,
  ]);
  if (rows.length === 0) io.out("  none");
  else {
    const [header = [], ...blocks] = tableBlocks(["ID", "KIND", "STATUS", "WHAT: OUTCOME"], rows);
    for (const line of header) io.out(line);
    blocks.forEach((block, i) => {
      for (const line of block) io.out(line);
      const wait = waits[i];
      if (wait?.status === "open") for (const line of openWaitDetails(run, wait, hint)) io.out(`       ${line}`);
    });
  }
  for (const line of inbox) io.out(`  ${line}`);
}

/** How much of its limits the run uses: its history (bytes, events, steps) and its unread inbox. */
function printLimits(io: Io, run: RunRecord, steps: StepRecord[], signals: SignalRecord[], limits: RunLimits): void {
  const size = historySize(run, steps);
  const taken = steps.reduce((max, s) => Math.max(max, s.seq), 0);
  const unread = signals.filter((s) => s.consumedBy === null).length;
  const pct = (figure: number, limit: number) => `${Math.floor((figure / limit) * 100)} %`;
  io.out(
    `  ${"history".padEnd(9)} ${formatBytes(size.bytes)} of ${formatBytes(limits.maxHistoryBytes)} (${pct(size.bytes, limits.maxHistoryBytes)}, maxHistoryBytes), ${size.events} of ${limits.maxHistoryEvents} events (${pct(size.events, limits.maxHistoryEvents)}, maxHistoryEvents), ${taken} of ${limits.maxSteps} steps (maxSteps)`,
  );
  io.out(
    `  ${"inbox".padEnd(9)} ${unread} unread of ${limits.maxUnreadSignals} signals (maxUnreadSignals)${isTerminal(run.state) ? "" : "; past it a signal is refused"}`,
  );
}

/** The runs this one names (parent, fork source, forks) that are no longer stored: pruned. */
async function prunedRelatives(runtime: Runtime, run: RunRecord): Promise<Set<string>> {
  const ids = [run.parentRunId, run.forkedFrom?.runId, ...(run.forks ?? []).map((f) => f.runId)];
  const named = ids.filter((id): id is string => typeof id === "string");
  const found = await Promise.all(named.map((id) => runtime.backend.getRun(id)));
  return new Set(named.filter((_, i) => found[i] === undefined));
}

/** The run's concurrency key and priority, and whether it waits for a slot; undefined without either. */
function flowLabel(run: RunRecord, now: number): string | undefined {
  const parts = [
    run.concurrencyKey === undefined ? "" : `concurrency key "${run.concurrencyKey}" (limit ${run.concurrencyLimit})`,
    run.priority === undefined ? "" : `priority ${run.priority}`,
    slotWait(run, now) === undefined ? "" : "waiting for a slot",
  ].filter(Boolean);
  return parts.length > 0 ? parts.join(", ") : undefined;
}

function printRun(io: Io, run: RunRecord, pruned: ReadonlySet<string>): void {
  const gone = (id: string) => (pruned.has(id) ? " (pruned)" : "");
  const now = Date.now();
  io.out(`run ${run.id}  ${run.agent}/${run.workflow}`);
  // Long lines (a long string in the output, say) wrap under themselves, indented two more.
  const field = (name: string, value: string) => {
    const lines = value.split("\n").flatMap((line) => {
      const indent = /^ */.exec(line)?.[0] ?? "";
      const [head = "", ...tail] = wrap(line.slice(indent.length), WIDTH - 12 - indent.length - 2);
      return [`${indent}${head}`, ...tail.map((t) => `${indent}  ${t}`)];
    });
    for (const [i, line] of lines.entries()) io.out(`  ${(i === 0 ? name : "").padEnd(9)} ${line}`);
  };
  field("state", stateLabel(run));
  field("key", run.key ?? "—");
  const flow = flowLabel(run, now);
  if (flow) field("flow", flow);
  field("epoch", String(run.epoch));
  field("lease", leaseLabel(run, now));
  field("created", `${dateTime(run.createdAt)} (${age(run.createdAt, now)})`);
  field("updated", `${dateTime(run.updatedAt)} (${age(run.updatedAt, now)})`);
  field(
    "versions",
    `workflow ${run.versions.workflow}, runtime ${run.versions.runtime}${run.versions.policy ? `, policies ${run.versions.policy}` : ""}${versionsBeyond(run)}`,
  );
  const budget = budgetLabel(run);
  if (budget) field("budget", budget);
  if (run.usage) {
    const u = run.usage;
    field(
      "usage",
      `${u.modelCalls > 0 ? `${u.inputTokens + u.outputTokens} tokens (${u.inputTokens} in, ${u.outputTokens} out), $${u.costUsd.toFixed(6)}, ${u.modelCalls} model calls, ` : ""}${u.toolCalls} tool calls, ${u.steps} steps`,
    );
  }
  if (run.acceptance) {
    const a = run.acceptance;
    field("verdict", `${a.decision} by ${actorLabel(a.by)} at ${dateTime(a.at)}${a.note ? `: ${a.note}` : ""}`);
  }
  const module = run.meta.module;
  if (typeof module === "string") field("module", module);
  const moved = run.state === "MOVED" ? (run.error?.data as { to?: unknown; digest?: unknown } | undefined) : undefined;
  if (moved) field("moved to", `${String(moved.to)} (contract ${String(moved.digest)}): continue it there`);
  const imported = run.meta.imported as { digest?: Json; from?: { backend?: Json; location?: Json } } | undefined;
  if (imported?.from) {
    const where = `${imported.from.backend}${imported.from.location ? ` ${imported.from.location}` : ""}`;
    field("imported", `from ${where} (contract ${imported.digest})`);
  }
  if (run.parentRunId)
    field(
      "parent",
      `run ${run.parentRunId}${gone(run.parentRunId)} (if it ends first: ${run.parentClosePolicy ?? "suspend"})`,
    );
  const origin = run.forkedFrom;
  if (origin) {
    const what = origin.kind === "rerun" ? "rerun of" : "forked from";
    field(
      "lineage",
      `${what} run ${origin.runId}${gone(origin.runId)} at step ${origin.fromStep}, by ${actorLabel(origin.by)} at ${dateTime(origin.at)}`,
    );
  }
  for (const [i, fork] of (run.forks ?? []).entries()) {
    field(
      i === 0 ? "forks" : "",
      `run ${fork.runId}${gone(fork.runId)} (${fork.kind} from step ${fork.fromStep}, ${dateTime(fork.at)})`,
    );
  }
  if (run.stopRequest) {
    const stop = run.stopRequest;
    field("stop", `${stop.kind} requested by ${actorLabel(stop.by)} at ${clock(stop.at)}: ${stop.reason}`);
  }
  field("input", compact(run.input));
  if (run.output !== undefined) field("output", compact(run.output));
  if (run.error) field("error", errorLabel(run.error));
}

/** The run's budget as `name limit, …`, or undefined without one. */
function budgetLabel(run: RunRecord): string | undefined {
  const budget = run.meta.budget;
  if (!budget || typeof budget !== "object" || Array.isArray(budget)) return undefined;
  return Object.entries(budget)
    .map(([k, v]) => `${k} ${String(v)}`)
    .join(", ");
}

/** One line when it fits, else indented JSON. */
function compact(value: Json | undefined): string {
  const line = JSON.stringify(value ?? null);
  return line.length <= WIDTH - 12 ? line : json(value);
}

function leaseLabel(run: RunRecord, now: number): string {
  if (run.leaseOwner === null) return "— (no worker holds the run)";
  const until = run.leaseExpiresAt;
  if (until === null) return `held by worker ${run.leaseOwner}`;
  const left = Math.round((until - now) / 1000);
  return `held by worker ${run.leaseOwner} until ${clock(until)} (${left > 0 ? `${left}s left` : `lapsed ${-left}s ago`})`;
}

function errorLabel(error: SerializedError): string {
  return `${error.code ? `[${error.code}] ` : `${error.name}: `}${error.message}`;
}

function printSteps(io: Io, steps: StepRecord[]): void {
  const rows: string[][] = [];
  const notes = new Map<number, string[]>();
  for (const step of steps) {
    const last = step.attempts.at(-1);
    const lastStart = last?.startedAt ?? step.startedAt;
    const lastEnd = last ? last.endedAt : step.endedAt;
    const usage = step.usage
      ? `${step.usage.inputTokens} in, ${step.usage.outputTokens} out${step.usage.costUsd ? `, $${step.usage.costUsd.toFixed(6)}` : ""}`
      : "";
    rows.push([
      String(step.seq),
      step.kind,
      step.name,
      step.status,
      String(step.attempts.length),
      clock(lastStart),
      lastEnd === null ? "—" : String(lastEnd - lastStart),
      usage,
    ]);
    const lines: string[] = [];
    for (const attempt of step.attempts.slice(0, -1)) {
      if (attempt.error)
        lines.push(`attempt ${attempt.attempt} (${clock(attempt.startedAt)}): ${errorLabel(attempt.error)}`);
    }
    if (step.error) lines.push(`error: ${errorLabel(step.error)}`);
    if (step.effect) lines.push(effectLabel(step));
    if (lines.length) notes.set(rows.length - 1, lines);
  }
  const [header = [], ...blocks] = tableBlocks(
    ["SEQ", "KIND", "NAME", "STATUS", "ATTEMPTS", "STARTED", "MS", "TOKENS"],
    rows,
  );
  for (const line of header) io.out(line);
  blocks.forEach((block, i) => {
    for (const line of block) io.out(line);
    for (const note of notes.get(i) ?? []) {
      for (const [j, part] of wrap(note, WIDTH - 9).entries()) io.out(`${j === 0 ? "       ↳ " : "         "}${part}`);
    }
  });
}

/** One line on an effect step: its id, status, key and receipt, or what to do when it is unknown. */
function effectLabel(step: StepRecord): string {
  const e = step.effect;
  if (!e) return "";
  const undoes = e.compensates !== undefined ? `, undoes step ${e.compensates}` : "";
  const head = `effect ${e.id} ${e.status}${undoes} · key ${e.idempotencyKey}`;
  if (e.status === "unknown") {
    return `${head} · outcome unknown: ${e.unknown ?? ""} → cairn reconcile ${step.runId} ${e.id} --outcome applied|not_applied`;
  }
  const by =
    e.settledBy === "reconcile" && e.reconciliation
      ? ` (reconciled by ${actorLabel(e.reconciliation.by)})`
      : e.settledBy === "status"
        ? " (by its status query)"
        : "";
  return `${head}${e.receipt !== undefined ? ` · receipt ${JSON.stringify(e.receipt)}` : ""}${by}`;
}

/** The authority, sandbox and context versions a run started under, those it has (DESIGN §3). */
function versionsBeyond(run: RunRecord): string {
  const { authority, sandbox, context } = run.versions;
  return [
    authority ? `, authority ${authority}` : "",
    sandbox ? `, sandbox ${sandbox}` : "",
    context ? `, context ${context}` : "",
  ].join("");
}
