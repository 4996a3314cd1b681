import { parseArgs } from "node:util";
import { CairnError } from "../core/errors.ts";
import { RUNTIME_VERSION } from "../runtime/version.ts";
import { CliError, usageError } from "./cli-error.ts";
import type { Command } from "./command.ts";
import { acceptCommand, rejectCommand } from "./commands/accept.ts";
import { answerCommand } from "./commands/answer.ts";
import { approveCommand, denyCommand } from "./commands/approve.ts";
import { cancelCommand } from "./commands/cancel.ts";
import { costCommand } from "./commands/cost.ts";
import { exportCommand } from "./commands/export.ts";
import { forkCommand, rerunCommand } from "./commands/fork.ts";
import { importCommand } from "./commands/import.ts";
import { initCommand } from "./commands/init.ts";
import { migrateCommand } from "./commands/migrate.ts";
import { pruneCommand } from "./commands/prune.ts";
import { reconcileCommand } from "./commands/reconcile.ts";
import { replayCommand } from "./commands/replay.ts";
import { resumeCommand } from "./commands/resume.ts";
import { runCommand } from "./commands/run.ts";
import { runsCommand } from "./commands/runs.ts";
import { sandboxesCommand } from "./commands/sandboxes.ts";
import { schedulesCommand } from "./commands/schedules.ts";
import { devCommand, serveCommand } from "./commands/serve.ts";
import { showCommand } from "./commands/show.ts";
import { signalCommand } from "./commands/signal.ts";
import { workerCommand } from "./commands/worker.ts";
import { DEFAULT_DB, databaseHelp } from "./database.ts";
import { type Io, processIo } from "./format.ts";

/** Every command, in the order `cairn help` lists them. */
export const COMMANDS: readonly Command[] = [
  runCommand,
  runsCommand,
  showCommand,
  exportCommand,
  importCommand,
  resumeCommand,
  forkCommand,
  rerunCommand,
  replayCommand,
  signalCommand,
  answerCommand,
  approveCommand,
  denyCommand,
  cancelCommand,
  reconcileCommand,
  acceptCommand,
  rejectCommand,
  costCommand,
  pruneCommand,
  schedulesCommand,
  devCommand,
  serveCommand,
  workerCommand,
  sandboxesCommand,
  migrateCommand,
  initCommand,
];

/**
 * The `cairn` command line. Returns the exit code: 0 on success, 1 on an error (or a run that did
 * not complete), 2 on a usage error. Never throws.
 *
 * @example
 * process.exitCode = await main(process.argv.slice(2));
 */
export async function main(argv: readonly string[], io: Io = processIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === "--version" || name === "-v" || name === "version") {
    io.out(`cairn ${RUNTIME_VERSION} (node ${process.versions.node})`);
    return 0;
  }
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    const topic = name === "help" ? rest[0] : undefined;
    const command = COMMANDS.find((c) => c.name === topic);
    if (topic !== undefined && !command) return fail(io, usageError(`unknown command "${topic}"`));
    for (const line of command ? commandHelp(command) : usage()) io.out(line);
    return 0;
  }
  const command = COMMANDS.find((c) => c.name === name);
  try {
    if (!command) {
      throw usageError(`unknown command "${name}" (commands: ${COMMANDS.map((c) => c.name).join(", ")}, help)`);
    }
    const parsed = parse(command, rest);
    if (parsed.values.help) {
      for (const line of commandHelp(command)) io.out(line);
      return 0;
    }
    return await command.run(parsed, io);
  } catch (error) {
    return fail(io, error, command);
  }
}

function parse(
  command: Command,
  args: string[],
): { positionals: string[]; values: Record<string, string | boolean | undefined> } {
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args,
      options: { ...command.options, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    // parseArgs reports unknown options and missing values as TypeErrors with ERR_PARSE_ARGS_* codes.
    const code = (error as { code?: string }).code;
    const option = /'(-[^']*)'/.exec((error as Error).message)?.[1];
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && option) {
      const known = [...Object.keys(command.options), "help"].map((o) => `--${o}`).join(", ");
      throw usageError(`unknown option ${option} for \`cairn ${command.name}\` (options: ${known})`);
    }
    throw usageError((error as Error).message);
  }
  const { positionals, values } = parsed;
  if (values.help) return { positionals, values: values as Record<string, string | boolean | undefined> };
  const missing = command.positionals.slice(positionals.length);
  if (missing.length > 0) throw usageError(`missing ${missing.map((p) => `<${p}>`).join(" ")}`);
  if (!command.variadic && positionals.length > command.positionals.length) {
    throw usageError(`unexpected argument "${positionals[command.positionals.length]}"`);
  }
  return { positionals, values: values as Record<string, string | boolean | undefined> };
}

function fail(io: Io, error: unknown, command?: Command): number {
  if (error instanceof CliError) {
    io.err(`error: ${error.message}`);
    if (error.exitCode === 2) io.err(command ? `usage: ${command.usage}` : "run `cairn help` for the commands");
    return error.exitCode;
  }
  if (error instanceof CairnError) {
    io.err(`error: [${error.code}] ${error.message}`);
    return 1;
  }
  // Not ours to explain: keep the stack, it is the only lead.
  io.err(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  return 1;
}

/** The database options as the synopses spell them, left out of the command list of `cairn help`. */
const DATABASE_SYNOPSIS = " [--db <path> | --database-url <url> [--schema <name>]]";

function usage(): string[] {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "cairn: durable execution for AI agents",
    "",
    "usage (all but migrate also take --db <path> or --database-url <url> [--schema <name>]):",
    ...COMMANDS.map((c) => `  ${c.usage.replace(DATABASE_SYNOPSIS, "")}`),
    "",
    "commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    `  ${"help".padEnd(width)}  this text; \`cairn help <command>\` for one command`,
    `  ${"--version".padEnd(width)}  the version of cairn`,
    "",
    `Runs are kept in SQLite at --db <path>, else $CAIRN_DB, else ${DEFAULT_DB};`,
    "or in PostgreSQL with --database-url postgres://user:password@host:5432/database (else $CAIRN_DATABASE_URL)",
    "and --schema <name> (default cairn): many `cairn worker` processes on many machines can share it.",
    "examples:",
    `  cairn run examples/report-builder.ts report_builder build --input '{"quarter":"2026-Q3"}'`,
    "  cairn runs --state PAUSED     what each paused run waits for: a question, an approval, a signal, …",
    "  cairn show <runId>            its waits, with the `cairn answer` / `cairn approve` command lines to copy",
    "  cairn export <runId> --yaml   the run's contract: transitions, effects, approvals, usage",
    "  cairn cost                    cost per accepted job: all runs' cost / the runs `cairn accept`ed",
  ];
}

function commandHelp(command: Command): string[] {
  return [
    `usage: ${command.usage}`,
    "",
    command.summary,
    ...command.details.map((d) => `  ${d}`),
    ...databaseHelp(command.options).map((d) => `  ${d}`),
  ];
}
