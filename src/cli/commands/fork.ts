import type { ForkResult } from "../../runtime/fork-operations.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { usageError } from "../cli-error.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command, CommandArgs } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import { printOutcome, TransitionPrinter } from "../follow.ts";
import { displayPath, type Io } from "../format.ts";
import { loadAgentModule, pickAgent } from "../load-module.ts";
import { moduleOf, readRun } from "./resume.ts";
import { parseInput } from "./run.ts";

/**
 * `cairn fork` and `cairn rerun` (DESIGN §4, "Fork and rerun"): a new run made from another's
 * journal up to a step, on the agent module's code now, driven here (or left PENDING with
 * `--detach` for a `cairn worker`).
 */

const SHARED_DETAILS = [
  "--module   the agent module to run it with (default: the one recorded when the source was started)",
  "--detach   make the new run and exit at once, leaving it PENDING for a `cairn worker` to claim",
  "The steps before the fork point are copied with their results: they are not run again, and the",
  "effects among them keep their receipts. Later effects get idempotency keys of the new run.",
  "The source keeps the new run in its `forks`; the new run names the source in `forkedFrom`.",
  "Exit code 0 when the new run COMPLETED (or was made, with --detach), 1 otherwise.",
];

export const forkCommand: Command = {
  name: "fork",
  summary: "start a new run from another run's journal up to a step, on today's code",
  usage:
    "cairn fork <runId> --from-step <n> [--input <json>] [--module <path>] [--detach] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--from-step  the first step the new run runs again (1 runs everything again; `cairn show <runId>` lists the steps)",
    "--input      the new run's input as JSON (default: the source's)",
    ...SHARED_DETAILS,
  ],
  positionals: ["runId"],
  options: {
    "from-step": { type: "string" },
    input: { type: "string" },
    module: { type: "string" },
    detach: { type: "boolean" },
    ...DATABASE_OPTIONS,
  },
  run: (args, io) => {
    const text = args.values["from-step"];
    const fromStep = Number(text);
    if (typeof text !== "string" || !Number.isInteger(fromStep) || fromStep < 1) {
      throw usageError(`--from-step must be a step number of 1 or more (got ${text === undefined ? "nothing" : text})`);
    }
    const input = args.values.input === undefined ? undefined : parseInput(args.values.input as string);
    return forkAndDrive(args, io, (client, runId, module) =>
      client.fork(runId, { fromStep, module, ...(input === undefined ? {} : { input }) }),
    );
  },
};

export const rerunCommand: Command = {
  name: "rerun",
  summary: "run a FAILED run again from its failed step, on today's code (a new run)",
  usage: "cairn rerun <runId> [--module <path>] [--detach] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "The steps before the failed one are kept; the failed step runs on the module's code now (fix",
    "the tool, then rerun). When the workflow failed in its own code after its last step, every",
    "step is kept and the new run goes on from the next one.",
    ...SHARED_DETAILS,
  ],
  positionals: ["runId"],
  options: { module: { type: "string" }, detach: { type: "boolean" }, ...DATABASE_OPTIONS },
  run: (args, io) => forkAndDrive(args, io, (client, runId, module) => client.rerun(runId, { module })),
};

async function forkAndDrive(
  { positionals: [runId = ""], values }: CommandArgs,
  io: Io,
  make: (client: Runtime, runId: string, module: string) => Promise<ForkResult>,
): Promise<number> {
  const database = chooseDatabase(values);
  const source = await readRun(await database.open({ create: false }), runId, database);
  const module = await loadAgentModule(moduleOf(source, values.module as string | undefined));
  pickAgent(module, source.agent);
  const client = cliRuntime(module, await database.open({ create: false }), "client");
  let made: ForkResult;
  try {
    made = await make(client, runId, module.file);
  } finally {
    await client.shutdown();
  }
  io.out(
    `run ${made.runId}  ${source.agent}/${source.workflow}  from run ${runId} at step ${made.fromStep}  module ${displayPath(module.file)}`,
  );
  if (values.detach === true) {
    io.out(`left PENDING for a worker; follow it with: cairn show ${made.runId} --follow${database.hint}`);
    return 0;
  }
  const printer = new TransitionPrinter(io);
  printer.follow(made.runId, 0);
  const runtime = cliRuntime(module, await database.open({ create: false }), { ownRuns: [made.runId] });
  runtime.onTransition(printer.listener);
  try {
    await runtime.start({ handleSignals: true });
    const run = await runtime.waitFor(made.runId);
    await printer.catchUp(runtime, made.runId);
    return printOutcome(io, run, database);
  } finally {
    await runtime.shutdown();
  }
}
