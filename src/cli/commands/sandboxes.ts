import { join } from "node:path";
import type { RunRecord } from "../../core/records.ts";
import type { SandboxInfo, SandboxProvider } from "../../core/sandbox.ts";
import { BubblewrapProvider } from "../../sandbox/bubblewrap/bubblewrap-provider.ts";
import { LocalSandboxProvider } from "../../sandbox/local/local-provider.ts";
import { endsSandboxes, labelParts } from "../../worker/sandbox-cleanup.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import { age, table } from "../format.ts";
import { loadAgentModule } from "../load-module.ts";

/** `cairn sandboxes`: the live (and lost) sandboxes of a sandboxes folder, with their runs. */
export const sandboxesCommand: Command = {
  name: "sandboxes",
  summary: "list the sandboxes that exist now, with their runs and the runs' states",
  usage: "cairn sandboxes [--dir <folder> | --module <module>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--dir      the providers' folder (default .cairn/sandboxes): local and bubblewrap sandboxes in it",
    "--module   an agent module whose runtimeOptions.sandbox names the provider (any kind)",
    "Each sandbox's label is <runId>/<name>; its run's state is read from the database. A sandbox whose",
    "run has ended is an orphan: a worker's sweep destroys it within a lease. A local sandbox is",
    "NOT ISOLATED: its commands run as this host's user.",
  ],
  positionals: [],
  options: { dir: { type: "string" }, module: { type: "string" }, ...DATABASE_OPTIONS },
  async run({ values }, io) {
    const providers = await providersOf(values.dir as string | undefined, values.module as string | undefined);
    const infos: SandboxInfo[] = [];
    for (const provider of providers) infos.push(...(await provider.list()));
    infos.sort((a, b) => a.createdAt - b.createdAt);
    const database = chooseDatabase(values);
    const runtime = cliRuntime(undefined, await database.open({ create: false }), "client");
    try {
      const runs = new Map<string, RunRecord | undefined>();
      for (const info of infos) {
        const runId = labelParts(info.label)?.runId;
        if (runId !== undefined && !runs.has(runId)) runs.set(runId, await runtime.backend.getRun(runId));
      }
      io.out(`sandboxes (${infos.length})`);
      if (infos.length === 0) return 0;
      const rows = infos.map((info) => {
        const parts = labelParts(info.label);
        const run = parts ? runs.get(parts.runId) : undefined;
        const state = run ? `${run.state}${endsSandboxes(run.state) ? " (ended: orphan)" : ""}` : "unknown run";
        return [
          info.id,
          info.isolated ? info.kind : `${info.kind}: NOT ISOLATED`,
          parts?.runId ?? info.label,
          parts?.name ?? "",
          state,
          age(info.createdAt),
        ];
      });
      for (const line of table(["ID", "KIND", "RUN", "NAME", "RUN STATE", "AGE"], rows)) io.out(line);
      return 0;
    } finally {
      await runtime.shutdown();
    }
  },
};

/** The module's sandbox provider, or the local and bubblewrap providers of the folder. */
async function providersOf(dir: string | undefined, module: string | undefined): Promise<SandboxProvider[]> {
  if (module !== undefined) {
    const provider = (await loadAgentModule(module)).config.sandbox?.provider;
    return provider ? [provider] : [];
  }
  const folder = dir ?? join(".cairn", "sandboxes");
  return [new LocalSandboxProvider({ dir: folder }), new BubblewrapProvider({ dir: folder })];
}
