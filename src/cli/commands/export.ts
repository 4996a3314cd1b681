import { stringify } from "yaml";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import { loadAgentModule } from "../load-module.ts";

/** `cairn export`: prints a run's contract (`runtime.exportRun`) as JSON or YAML. */
export const exportCommand: Command = {
  name: "export",
  summary: "print a run's contract: its job, transitions, effects, approvals, acceptance, usage",
  usage: "cairn export <runId> [--yaml] [--module <path>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--yaml     YAML instead of JSON",
    "--module   the agent module, for its tools' retry policies and timeouts (else they are null)",
    "One self-contained record of the run (format cairn.run-contract/1): the job it serves (from the",
    "run's meta.job), every transition, the last checkpoint and how a resume proceeds, the retry rules,",
    "each effect with its idempotency key and receipt, waits and approvals, interruptions, how it",
    "ended, the acceptance verdict, what is still unresolved, its usage and the full step journal.",
    "Times are ISO 8601 (UTC). Redirect it to a file: cairn export <runId> > run.json",
  ],
  positionals: ["runId"],
  options: { yaml: { type: "boolean" }, module: { type: "string" }, ...DATABASE_OPTIONS },
  async run({ positionals: [runId = ""], values }, io) {
    const path = values.module as string | undefined;
    const module = path === undefined ? undefined : await loadAgentModule(path);
    const database = chooseDatabase(values);
    const runtime = cliRuntime(module, await database.open({ create: false }), "client");
    try {
      const contract = await runtime.exportRun(runId);
      const text = values.yaml
        ? // No anchors: the same actor or versions object appears as often as it occurs.
          stringify(contract, { aliasDuplicateObjects: false, lineWidth: 0 })
        : JSON.stringify(contract, null, 2);
      for (const line of text.replace(/\n$/, "").split("\n")) io.out(line);
      return 0;
    } finally {
      await runtime.shutdown();
    }
  },
};
