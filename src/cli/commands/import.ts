import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { usageError } from "../cli-error.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import { stateLabel } from "../format.ts";

/** `cairn import`: recreates a run from its exported contract (`runtime.importRun`). */
export const importCommand: Command = {
  name: "import",
  summary: "recreate a run from its exported contract (cairn export) in this database, to continue it here",
  usage: "cairn import <file> [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "<file>     a contract written by `cairn export <runId> [--move] [--yaml]` (JSON or YAML; - reads stdin)",
    "The run comes back as it was: its transitions, journal, effects, waits, approvals, signals, usage",
    "and verdict, with their ids, actors and times. A paused run stays paused on its waits, an",
    "INTERRUPTED one can be resumed, and a worker of this database continues it. A contract that was",
    "changed after its export is refused naming the field; the same contract imported again changes",
    "nothing. Use `cairn export --move` at the source so that the run is not continued in two places.",
  ],
  positionals: ["file"],
  options: { ...DATABASE_OPTIONS },
  async run({ positionals: [file = ""], values }, io) {
    if (file === "") throw usageError("give the contract file: cairn import run.json");
    let text: string;
    try {
      text = readFileSync(file === "-" ? 0 : file, "utf8");
    } catch (error) {
      throw usageError(`cannot read ${file}: ${(error as Error).message}`);
    }
    let contract: unknown;
    try {
      contract = text.trimStart().startsWith("{") ? JSON.parse(text) : parse(text);
    } catch (error) {
      throw usageError(`${file} is neither JSON nor YAML: ${(error as Error).message}`);
    }
    const database = chooseDatabase(values);
    const runtime = cliRuntime(undefined, await database.open({ create: true }), "client");
    try {
      const { run, created } = await runtime.importRun(contract);
      io.out(
        created
          ? `imported run ${run.id} (${run.agent}.${run.workflow}) into ${database.label}: ${stateLabel(run)}, ${run.lastTransitionId} transitions`
          : `run ${run.id} was imported into ${database.label} from this contract before: nothing changed (${stateLabel(run)})`,
      );
      io.out(`next: cairn show ${run.id}${database.hint}`);
      return 0;
    } finally {
      await runtime.shutdown();
    }
  },
};
