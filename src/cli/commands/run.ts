import type { AgentDefinition } from "../../core/agent-definition.ts";
import { InvalidInputError } from "../../core/errors.ts";
import type { Json, TransitionRecord } from "../../core/records.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { usageError } from "../cli-error.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS, type Database } from "../database.ts";
import { printOutcome, TransitionPrinter } from "../follow.ts";
import { type Io, truncate, WIDTH } from "../format.ts";
import { type AgentModule, checkWorkflow, loadAgentModule, pickAgent } from "../load-module.ts";
import { cliLogger, LOG_DETAILS, LOG_OPTIONS } from "../log-options.ts";
import { LiveProgress, printRunEvents, streamEnd } from "../progress.ts";
import { pausedLines, waitCommands, waitLine } from "../waits.ts";

/** `cairn run`: starts a run and prints its transitions as they happen, then its result. */
export const runCommand: Command = {
  name: "run",
  summary: "start a workflow run, print its transitions live, then its result",
  usage:
    "cairn run <module> <agent> <workflow> [--input <json>] [--key <key>] [--detach] [--quiet] [--log-format json|pretty] [--log-level <level>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "<module>   a .ts or .js file (relative to the current directory) that exports agents",
    "           (defineAgent or @agent) and optionally `runtimeOptions = defineConfig({ domains, models })`",
    "--input    the workflow input as JSON (default {})",
    "--key      idempotency key: a second run with the same key returns the first run",
    "This process drives the run itself (and no other run). When `cairn worker` processes share",
    "the database, whichever process claims the run first drives it; its transitions are printed",
    "as they are recorded.",
    "--detach   start the run and exit at once (exit code 0), leaving it PENDING for a `cairn worker`",
    "           on the same database to claim; prints the run id and how to follow it",
    "Progress: each step attempt as it starts and ends (kind, name, attempt, duration), a retry with its",
    "cause and the wait before the next attempt, model text as it streams; on a terminal, a running",
    "step's elapsed time on a live line. Plain lines when stdout is not a terminal.",
    "--quiet    leave the streamed model text out",
    ...LOG_DETAILS,
    "Exit code 0 when the run COMPLETED, 1 otherwise.",
  ],
  positionals: ["module", "agent", "workflow"],
  options: {
    input: { type: "string" },
    key: { type: "string" },
    detach: { type: "boolean" },
    quiet: { type: "boolean" },
    ...LOG_OPTIONS,
    ...DATABASE_OPTIONS,
  },
  async run({ positionals: [modulePath = "", agentName = "", workflow = ""], values }, baseIo) {
    const input = parseInput(values.input as string | undefined);
    const key = values.key as string | undefined;
    const database = chooseDatabase(values);
    const module = await loadAgentModule(modulePath);
    const agent = pickAgent(module, agentName);
    checkWorkflow(agent, workflow);
    if (values.detach === true) return startDetached({ module, agent, workflow, input, key }, database, baseIo);
    // Every line goes through the progress printer, so none lands inside streamed text.
    const progress = new LiveProgress(baseIo, { quiet: values.quiet === true });
    const io = progress.io;
    const logger = cliLogger(values, io);
    const runtime = cliRuntime(module, await database.open({ create: true }), { ownRuns: [] }, logger);
    // Set once the run is started; the printer prints nothing before that.
    let runId = "";
    let last: TransitionRecord | undefined;
    const printer = new TransitionPrinter(io, {
      onPrinted(transition) {
        last = transition;
        // Say what the run waits for and how to give it, unless it has moved on meanwhile.
        if (transition.to === "PAUSED") {
          void pauseHint(runtime, runId, database.hint).then(
            (lines) => {
              if (last === transition) for (const line of lines) io.out(line);
            },
            () => {},
          );
        }
      },
    });
    runtime.onTransition(printer.listener);
    try {
      await runtime.start({ handleSignals: true });
      const handle = await startRun(runtime, { module, agent, workflow, input, key }, database, io);
      runId = handle.id;
      if (!handle.created) io.out(`  a run with key "${key}" already exists: following it`);
      // start({ handleSignals: true }) shuts the runtime down on SIGINT/SIGTERM and exits with 130;
      // until then, say what happens to the run and stop asking the closing runtime about it.
      let stopping = false;
      const onSignal = (signal: string) => {
        stopping = true;
        io.err(
          last?.to === "PAUSED"
            ? `${signal}: stopping; the run stays PAUSED (nothing of it runs meanwhile); once it resumes, a \`cairn worker\` or \`cairn resume ${handle.id}${database.hint}\` continues it`
            : `${signal}: stopping; steps in flight get ${SHUTDOWN_GRACE_S}s to finish, then the run is recorded INTERRUPTED (resume it with: cairn resume ${handle.id}${database.hint})`,
        );
      };
      process.once("SIGINT", onSignal).once("SIGTERM", onSignal);
      printer.follow(handle.id);
      const watching = new AbortController();
      const streamed = printRunEvents(runtime, handle.id, progress, watching.signal);
      // Another process (a `cairn worker` on the same database) may drive the run: print what it
      // records as it goes, not only at the end.
      const catchingUp = setInterval(() => {
        if (!stopping) printer.catchUp(runtime, handle.id).catch(() => {});
      }, CATCH_UP_MS);
      try {
        const run = await runtime.waitFor(handle.id);
        await printer.catchUp(runtime, handle.id);
        // The stream ends once the run settled: its last events are printed before the outcome.
        await streamEnd(streamed);
        progress.close();
        return printOutcome(io, run, database);
      } catch (error) {
        if (stopping) return new Promise<number>(() => {});
        throw error;
      } finally {
        clearInterval(catchingUp);
        watching.abort();
        progress.close();
        process.off("SIGINT", onSignal).off("SIGTERM", onSignal);
      }
    } finally {
      await runtime.shutdown();
    }
  },
};

/** What `cairn run` was asked to start. */
interface RunRequest {
  module: AgentModule;
  agent: AgentDefinition;
  workflow: string;
  input: Json;
  key: string | undefined;
}

/** Starts the run (or finds the one its key names) and prints its header line. */
async function startRun(runtime: Runtime, request: RunRequest, database: Database, io: Io) {
  const { module, agent, workflow, input, key } = request;
  const handle = await runtime
    .run(agent, workflow, input, { ...(key !== undefined && { key }), module: module.file })
    .catch((error: unknown) => {
      // The workflow's input schema refused it: say where the input came from.
      if (!(error instanceof InvalidInputError) || error.issues.length === 0) throw error;
      const given = truncate(JSON.stringify(input), 80);
      throw new InvalidInputError(
        `${error.message} (the input was ${given}: set it with --input '<json>')`,
        error.issues,
        {
          cause: error,
        },
      );
    });
  io.out(`run ${handle.id}  ${agent.name}/${workflow}${key ? `  key ${key}` : ""}  db ${database.label}`);
  return handle;
}

/**
 * `cairn run --detach`: starts the run from a client-only runtime (it never executes a run) and
 * says how to follow it; a `cairn worker` on the database claims it.
 */
async function startDetached(request: RunRequest, database: Database, io: Io): Promise<number> {
  const runtime = cliRuntime(request.module, await database.open({ create: true }), "client");
  try {
    await runtime.start();
    const { key } = request;
    const handle = await startRun(runtime, request, database, io);
    if (handle.created) {
      io.out("  started PENDING: a `cairn worker` on this database claims it and drives it");
    } else {
      const run = await runtime.getRun(handle.id);
      io.out(`  a run with key "${key}" already exists (${run.state}): nothing started`);
    }
    io.out(`  follow it: cairn show ${handle.id} --follow${database.hint}`);
    return 0;
  } finally {
    await runtime.shutdown();
  }
}

/**
 * What a run that just paused waits for, with the command lines that give it, and what this
 * process does meanwhile.
 */
async function pauseHint(runtime: Runtime, runId: string, hint: string): Promise<string[]> {
  const run = await runtime.getRun(runId);
  if (run.state !== "PAUSED") return [];
  const waits = await runtime.backend.loadWaits(runId);
  const lines: string[] = [];
  if (run.pausedReason === "suspended_orphan") lines.push(...pausedLines(run, waits));
  for (const wait of waits.filter((w) => w.status === "open")) {
    lines.push(`  ↳ ${truncate(waitLine(wait), WIDTH - 4)}`);
    // An approval is decided on its payload: `show` prints it with the digest and the command lines.
    const commands: [string, string][] =
      wait.kind === "approval"
        ? [["decide", `cairn show ${run.id}${hint}  (the payload, its digest, cairn approve/deny)`]]
        : waitCommands(run, wait, hint);
    for (const [name, command] of commands) lines.push(`      ${name.padEnd(8)} ${command}`);
  }
  lines.push("  waiting: this process goes on with the run when it resumes; Ctrl-C leaves it PAUSED");
  return lines;
}

/** The runtime's default `shutdownGraceMs`, in seconds. */
const SHUTDOWN_GRACE_S = 10;

/** How often transitions recorded by other processes are looked for. */
const CATCH_UP_MS = 500;

export function parseInput(text: string | undefined): Json {
  if (text === undefined) return {};
  try {
    return JSON.parse(text) as Json;
  } catch (cause) {
    throw usageError(
      `--input is not valid JSON (${(cause as Error).message}); quote it for the shell, e.g. --input '{"quarter":"2026-Q3"}'`,
    );
  }
}
