import { setTimeout as sleep } from "node:timers/promises";
import type { RuntimeBackend } from "../../backend/backend.ts";
import { IllegalTransitionError, LeaseLostError, RunNotFoundError, RunNotResumableError } from "../../core/errors.ts";
import type { RunRecord, StepRecord } from "../../core/records.ts";
import { isTerminal, OWNED_STATES } from "../../core/run-state.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { CliError } from "../cli-error.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS, type Database } from "../database.ts";
import { printOutcome, TransitionPrinter } from "../follow.ts";
import { clock, displayPath, type Io } from "../format.ts";
import { loadAgentModule, pickAgent } from "../load-module.ts";
import { cliLogger, LOG_DETAILS, LOG_OPTIONS } from "../log-options.ts";
import { LiveProgress, printRunEvents, streamEnd } from "../progress.ts";

/**
 * `cairn resume`: continues a run whose process died (or that stopped INTERRUPTED) from its
 * checkpoints, in this process, and prints its transitions until it ends.
 *
 * Two phases on purpose: the resume itself (→ INTERRUPTED when the owner is gone, → RESUMING) is
 * made by a client runtime with no worker, so no recovery sweep races it; only then does a
 * runtime with a worker start and claim the RESUMING run.
 */
export const resumeCommand: Command = {
  name: "resume",
  summary: "resume an interrupted run from its checkpoints and follow it to the end",
  usage:
    "cairn resume <runId> [--module <path>] [--quiet] [--log-format json|pretty] [--log-level <level>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--module   the agent module to run it with (default: the one recorded when the run was started)",
    "If a live worker still holds the run's lease, waits for the lease to lapse (once) before giving up.",
    "Also drives a run nobody drives: one that resumed (RESUMING) after an answer, approval or signal,",
    "or a cancelled one (CANCELLING) whose cancel no worker has finished. A PAUSED run is not resumed:",
    "it waits for what it waits for (`cairn show <runId>`), or for `cairn cancel`.",
    "Progress: as `cairn run`, each step attempt this process runs as it starts and ends, retries",
    "with their cause and wait, model text as it streams (steps restored from checkpoints print",
    "nothing); a live elapsed line on a terminal, plain lines elsewhere.",
    "--quiet    leave the streamed model text out",
    "Exit code 0 when the run COMPLETED, 1 otherwise.",
    ...LOG_DETAILS,
  ],
  positionals: ["runId"],
  options: { module: { type: "string" }, quiet: { type: "boolean" }, ...LOG_OPTIONS, ...DATABASE_OPTIONS },
  async run({ positionals: [runId = ""], values }, baseIo) {
    const database = chooseDatabase(values);
    const stored = await readRun(await database.open({ create: false }), runId, database);
    if (isTerminal(stored.state) && stored.state !== "INTERRUPTED" && stored.error?.code !== "REPLAY_DIVERGENCE") {
      throw new CliError(
        `run ${runId} is ${stored.state}; only INTERRUPTED runs (and FAILED ones with REPLAY_DIVERGENCE) can be resumed; see \`cairn show ${runId}${database.hint}\`${stored.state === "FAILED" ? `, or run it again as a new run from its failed step: \`cairn rerun ${runId}${database.hint}\`` : ""}`,
      );
    }
    const module = await loadAgentModule(moduleOf(stored, values.module as string | undefined));
    pickAgent(module, stored.agent);
    // Every line goes through the progress printer, so none lands inside streamed text.
    const progress = new LiveProgress(baseIo, { quiet: values.quiet === true });
    const io = progress.io;
    io.out(
      `resuming run ${runId}  ${stored.agent}/${stored.workflow}  (${stored.state})  module ${displayPath(module.file)}`,
    );
    const printer = new TransitionPrinter(io);
    printer.follow(runId, stored.lastTransitionId);
    const resumedAt = Date.now();

    const client = cliRuntime(module, await database.open({ create: false }), "client");
    client.onTransition(printer.listener);
    try {
      await requestResume(client, runId, io, database);
    } finally {
      await client.shutdown();
    }

    const runtime = cliRuntime(
      module,
      await database.open({ create: false }),
      { ownRuns: [runId] },
      cliLogger(values, io),
    );
    runtime.onTransition(printer.listener);
    try {
      await runtime.start({ handleSignals: true });
      const watching = new AbortController();
      const streamed = printRunEvents(runtime, runId, progress, watching.signal);
      // Transitions other processes record meanwhile (an answer, a cancel) are printed as they come.
      const catchingUp = setInterval(() => printer.catchUp(runtime, runId).catch(() => {}), CATCH_UP_MS);
      let run: RunRecord;
      try {
        run = await runtime.waitFor(runId);
        await printer.catchUp(runtime, runId);
        // The stream ends once the run settled: its last events are printed before the outcome.
        await streamEnd(streamed);
      } finally {
        clearInterval(catchingUp);
        watching.abort();
        progress.close();
      }
      printReuse(io, (await runtime.history(runId)).steps, resumedAt);
      return printOutcome(io, run, database);
    } finally {
      await runtime.shutdown();
    }
  },
};

/** How often transitions recorded by other processes are looked for. */
const CATCH_UP_MS = 500;

export async function readRun(backend: RuntimeBackend, runId: string, database: Database): Promise<RunRecord> {
  try {
    const run = await backend.getRun(runId);
    if (!run) {
      throw new RunNotFoundError(`no run with id "${runId}"; list runs with \`cairn runs${database.hint}\``);
    }
    return run;
  } finally {
    await backend.close();
  }
}

export function moduleOf(run: RunRecord, flag: string | undefined): string {
  if (flag !== undefined) return flag;
  const recorded = run.meta.module;
  if (typeof recorded === "string") return recorded;
  throw new CliError(
    `run ${run.id} has no agent module recorded (it was not started by \`cairn run\`); pass --module <path> to the file that exports agent "${run.agent}"`,
  );
}

/**
 * Moves the run to RESUMING. A PENDING or RESUMING run nobody holds needs no resume: the worker
 * claims it as it is; so does a CANCELLING one (cancelled while PAUSED), whose cancel it finishes. While a live worker holds the lease, waits once for the lease to lapse.
 */
async function requestResume(client: Runtime, runId: string, io: Io, database: Database): Promise<void> {
  let waitedFor: number | undefined;
  for (let raced = 0; ; ) {
    const run = await client.getRun(runId);
    const unheld = run.leaseOwner === null || (run.leaseExpiresAt !== null && run.leaseExpiresAt <= Date.now());
    if ((run.state === "PENDING" || run.state === "RESUMING" || run.state === "CANCELLING") && unheld) {
      io.out(`  run is ${run.state} and no worker holds it: driving it here`);
      return;
    }
    try {
      await client.resume(runId);
      return;
    } catch (error) {
      if ((error instanceof LeaseLostError || error instanceof IllegalTransitionError) && raced++ < 3) continue;
      if (!(error instanceof RunNotResumableError)) throw error;
      const now = await client.getRun(runId);
      const until = now.leaseExpiresAt;
      if (!OWNED_STATES.has(now.state) || until === null) throw error;
      if (waitedFor !== undefined && until > waitedFor) {
        throw new CliError(
          `worker ${now.leaseOwner} is alive and renewed its lease on run ${runId}: it is still driving the run (${now.state}); stop that process first, or follow the run with \`cairn show ${runId}${database.hint}\``,
        );
      }
      waitedFor = until;
      const ms = Math.max(0, until - Date.now()) + 250;
      io.out(
        `  worker ${now.leaseOwner} still holds the lease on this ${now.state} run until ${clock(until)}; waiting ${Math.ceil(ms / 1000)}s for it to lapse…`,
      );
      await sleep(ms);
    }
  }
}

/** Which steps the resume took from their checkpoints and which it ran. */
function printReuse(io: Io, steps: StepRecord[], resumedAt: number): void {
  const shown = steps.filter((s) => s.kind !== "value");
  const restored = shown.filter((s) => s.status === "completed" && s.endedAt !== null && s.endedAt < resumedAt);
  // Steps started (or attempted) after the resume; a wait still open since before it did not run.
  // An effect whose open outcome was settled after the resume (by its status query or an
  // operator) did not run again.
  const settled = shown.filter(
    (s) =>
      !restored.includes(s) &&
      (s.effect?.settledBy === "status" || s.effect?.settledBy === "reconcile") &&
      !s.attempts.some((a) => a.startedAt >= resumedAt),
  );
  const ran = shown.filter(
    (s) =>
      !restored.includes(s) &&
      !settled.includes(s) &&
      (s.startedAt >= resumedAt || (s.endedAt ?? 0) >= resumedAt || s.attempts.some((a) => a.startedAt >= resumedAt)),
  );
  const names = (list: StepRecord[]) => list.map((s) => `${s.name} (#${s.seq})`).join(", ") || "none";
  io.out();
  io.out(`restored from checkpoints, not run again: ${names(restored)}`);
  if (settled.length > 0) {
    io.out(
      `settled, not run again:                   ${settled.map((s) => `${s.name} (#${s.seq}, by ${s.effect?.settledBy === "status" ? "its status query" : "an operator"})`).join(", ")}`,
    );
  }
  io.out(`run after the resume:                     ${names(ran)}`);
}
