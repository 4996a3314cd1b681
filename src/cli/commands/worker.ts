import { DEFAULT_WORKER_CONCURRENCY as DEFAULT_CONCURRENCY } from "../../worker/worker-options.ts";
import { usageError } from "../cli-error.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import { TransitionPrinter } from "../follow.ts";
import type { Io } from "../format.ts";
import { type AgentModule, loadAgentModule, mergeAgentModules } from "../load-module.ts";
import { cliLogger, LOG_DETAILS, LOG_OPTIONS } from "../log-options.ts";

/** The worker's defaults (see WorkerOptions), for the help text and the ready line. */
const DEFAULT_AUTO_RECOVERIES = 3;
/** The runtime's default `shutdownGraceMs`, in seconds. */
const SHUTDOWN_GRACE_S = 10;

/**
 * `cairn worker`: a long-running worker process. It claims the runs of its modules' agents from
 * the database (any run, started by any process), recovers runs whose worker died, prints one
 * line per transition it makes, and stops gracefully on SIGTERM or SIGINT.
 */
export const workerCommand: Command = {
  name: "worker",
  summary: "run a worker process: claim and drive the runs of the modules' agents until stopped",
  usage:
    "cairn worker <module> [<module>…] [--database-url <url> [--schema <name>] | --db <path>] [--concurrency <n>] [--log-format json|pretty] [--log-level <level>]",
  details: [
    "<module>   one or more agent modules (as for `cairn run`); the worker runs their agents only",
    `--concurrency  runs driven at once (default ${DEFAULT_CONCURRENCY})`,
    "Runs whose worker died (its lease lapsed) are recorded INTERRUPTED and resumed from their",
    `checkpoints, at most ${DEFAULT_AUTO_RECOVERIES} times each. SIGTERM or SIGINT stops it: runs in flight get`,
    `${SHUTDOWN_GRACE_S}s to finish, then are recorded INTERRUPTED for another worker to resume`,
    "(exit code 143, or 130 for SIGINT).",
    ...LOG_DETAILS,
  ],
  positionals: ["module"],
  variadic: true,
  options: { concurrency: { type: "string" }, ...LOG_OPTIONS, ...DATABASE_OPTIONS },
  async run({ positionals, values }, io) {
    const concurrency = parseConcurrency(values.concurrency as string | undefined);
    const database = chooseDatabase(values);
    const modules: AgentModule[] = [];
    for (const path of positionals) {
      const module = await loadAgentModule(path);
      if (!modules.some((m) => m.file === module.file)) modules.push(module);
    }
    const merged = mergeAgentModules(modules);
    warnAboutDefaultModel(io, modules, merged.config.models);
    const logger = cliLogger(values, io);
    const runtime = cliRuntime(
      merged,
      await database.open({ create: true }),
      { ...(concurrency !== undefined && { concurrency }) },
      logger,
    );
    const printer = new TransitionPrinter(io);
    printer.followAll();
    runtime.onTransition(printer.listener);
    try {
      await runtime.start({ handleSignals: true });
    } catch (error) {
      await runtime.shutdown();
      throw error;
    }
    const id = runtime.workerId ?? "?";
    io.out(
      `worker ${id} ready  agents ${[...merged.agents.keys()].join(", ")}  database ${database.label}  concurrency ${concurrency ?? DEFAULT_CONCURRENCY}`,
    );
    // The runtime's own signal handler shuts it down and exits the process (130 or 143).
    const onSignal = (signal: string) => {
      io.out(
        `${signal}: stopping worker ${id}; runs in flight get ${SHUTDOWN_GRACE_S}s to finish, then are recorded INTERRUPTED for another worker to resume`,
      );
    };
    process.once("SIGINT", onSignal).once("SIGTERM", onSignal);
    process.once("exit", (code) => io.out(`worker ${id} stopped (exit code ${code})`));
    // The worker's timers do not keep the process alive; this does, until a signal ends it.
    setInterval(() => {}, 1 << 30);
    return new Promise<number>(() => {});
  },
};

function parseConcurrency(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw usageError(`--concurrency must be a whole number above 0 (got "${text}")`);
  return n;
}

/**
 * A module with one model uses it for calls that name none; several modules together may have
 * several and no `default`, and then such calls fail. Said once, at start.
 */
function warnAboutDefaultModel(io: Io, modules: AgentModule[], models: Record<string, unknown> | undefined): void {
  const names = Object.keys(models ?? {});
  if (modules.length < 2 || names.length < 2 || names.includes("default")) return;
  io.err(
    `warning: the modules define models ${names.join(", ")} and none is named "default": a ctx.llm call that names no model will fail; name one of them "default"`,
  );
}
