import { closeSync, fsyncSync, openSync, writeSync } from "node:fs";
import { stringify } from "yaml";
import type { RunContract } from "../../core/run-contract.ts";
import { usageError } from "../cli-error.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import type { Io } from "../format.ts";
import { loadAgentModule } from "../load-module.ts";

/** `cairn export`: prints a run's contract (`runtime.exportRun`) as JSON or YAML; `--move` fences the source. */
export const exportCommand: Command = {
  name: "export",
  summary: "print a run's contract: its job, transitions, effects, approvals, acceptance, usage",
  usage:
    "cairn export <runId> [--yaml] [--out <file>] [--move [--to <where>]] [--module <path>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--yaml     YAML instead of JSON",
    "--out      write the contract to this file (flushed to disk) instead of printing it",
    "--move     move the run: once the contract is written, the run ends MOVED here, so that no worker",
    "           of this database continues it; continue it elsewhere with `cairn import <file>`",
    "--to       where it goes, kept in the MOVED record (`cairn show` prints it); no passwords",
    "--module   the agent module, for its tools' retry policies and timeouts (else they are null)",
    "One self-contained record of the run (format cairn.run-contract/1): the job it serves (from the",
    "run's meta.job), every transition, the last checkpoint and how a resume proceeds, the retry rules,",
    "each effect with its idempotency key and receipt, waits and approvals, interruptions, how it",
    "ended, the acceptance verdict, what is still unresolved, its usage and the full step journal,",
    "with a sha-256 digest over it all. Times are ISO 8601 (UTC).",
  ],
  positionals: ["runId"],
  options: {
    yaml: { type: "boolean" },
    out: { type: "string" },
    move: { type: "boolean" },
    to: { type: "string" },
    module: { type: "string" },
    ...DATABASE_OPTIONS,
  },
  async run({ positionals: [runId = ""], values }, io) {
    const path = values.module as string | undefined;
    const out = values.out as string | undefined;
    const to = values.to as string | undefined;
    if (to !== undefined && !values.move) throw usageError("--to says where a moved run went: give it with --move");
    const module = path === undefined ? undefined : await loadAgentModule(path);
    const database = chooseDatabase(values);
    const runtime = cliRuntime(module, await database.open({ create: false }), "client");
    const write = (contract: RunContract) => writeContract(contract, { yaml: values.yaml === true, out }, io);
    try {
      if (!values.move) {
        write(await runtime.exportRun(runId));
        return 0;
      }
      await runtime.moveRun(runId, { keep: write, ...(to !== undefined && { to }) });
      io.err(
        `run ${runId} is MOVED here; continue it elsewhere: cairn import ${out ?? "<file>"} --database-url <url> (or --db <path>)`,
      );
      return 0;
    } finally {
      await runtime.shutdown();
    }
  },
};

/** Prints the contract, or writes it to `out` and flushes it to disk before the move goes on. */
function writeContract(contract: RunContract, options: { yaml: boolean; out: string | undefined }, io: Io): void {
  const text = options.yaml
    ? // No anchors: the same actor or versions object appears as often as it occurs.
      stringify(contract, { aliasDuplicateObjects: false, lineWidth: 0 })
    : `${JSON.stringify(contract, null, 2)}\n`;
  if (options.out === undefined) {
    for (const line of text.replace(/\n$/, "").split("\n")) io.out(line);
    return;
  }
  const fd = openSync(options.out, "w");
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
