import { readFile } from "node:fs/promises";
import { parse as parseYaml } from "yaml";
import type { RuntimeBackend } from "../../backend/backend.ts";
import type { RunContract } from "../../core/run-contract.ts";
import { type RecordedHistory, type ReplayResult, replayHistories } from "../../runtime/replay-histories.ts";
import { CliError, usageError } from "../cli-error.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import type { Io } from "../format.ts";
import { type AgentModule, loadAgentModule } from "../load-module.ts";

/**
 * `cairn replay` (DESIGN §4, "Replaying histories against new code"): recorded journals — the
 * runs of a database, or exported contracts — through the agent module's code, nothing executed.
 */
export const replayCommand: Command = {
  name: "replay",
  summary: "replay recorded runs through the module's code now and report each divergence",
  usage: "cairn replay --module <path> [<contract files>…] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--module   the agent module as it would be deployed (its workflows are replayed, no step runs)",
    "<contract files>  runs exported with `cairn export` (JSON or YAML); without any, every run of",
    "           the module's agents in the database is replayed",
    "Each workflow call is matched with the recorded step (kind and name) and given its recorded",
    "result; a call past the end of a history stops that replay (the run would go on from there).",
    "Each divergence names the run, the step, what the history holds and what the code asked for.",
    "Exit code 1 when any run diverges (or throws where it did not), 0 otherwise.",
  ],
  positionals: [],
  variadic: true,
  options: { module: { type: "string" }, ...DATABASE_OPTIONS },
  async run({ positionals: files, values }, io) {
    const path = values.module;
    if (typeof path !== "string") throw usageError("--module <path> is required: the agent module to replay against");
    const module = await loadAgentModule(path);
    const histories = files.length > 0 ? await readContracts(files) : await readDatabase(values, module);
    const report = await replayHistories({ agents: [...module.agents.values()], histories });
    for (const result of report.results) printResult(io, result);
    const count = (status: ReplayResult["status"]) => report.results.filter((r) => r.status === status).length;
    io.out(
      `replayed ${report.results.length} runs against ${path}: ${count("ok")} ok, ${count("diverged")} diverged, ${count("failed")} failed, ${count("skipped")} skipped`,
    );
    return report.problems.length > 0 ? 1 : 0;
  },
};

function printResult(io: Io, r: ReplayResult): void {
  const run = `run ${r.runId}  ${r.agent}/${r.workflow}`;
  if (r.status === "ok") io.out(`ok        ${run}  (${r.steps} steps)`);
  else if (r.status === "skipped") io.out(`skipped   ${run}: ${r.message}`);
  else if (r.status === "failed") io.err(`FAILED    ${run}: ${r.message}`);
  else {
    const code = r.called ?? "nothing (the workflow finished)";
    io.err(`DIVERGED  ${run}  step ${r.seq}: the history has ${r.history ?? "nothing"}, the code asked for ${code}`);
    for (const line of (r.message ?? "").split("\n").slice(1, -1)) io.err(`          ${line}`);
  }
}

async function readContracts(files: readonly string[]): Promise<RecordedHistory[]> {
  const histories: RecordedHistory[] = [];
  for (const file of files) {
    let contract: RunContract;
    try {
      const text = await readFile(file, "utf8");
      contract = (file.endsWith(".yaml") || file.endsWith(".yml") ? parseYaml(text) : JSON.parse(text)) as RunContract;
    } catch (cause) {
      throw new CliError(`contract "${file}" could not be read: ${(cause as Error).message}`, { cause });
    }
    if (!contract?.run?.id || !Array.isArray(contract.journal?.steps)) {
      throw new CliError(
        `"${file}" is not a run contract (no run.id or journal.steps); write one with \`cairn export <runId> > ${file}\``,
      );
    }
    const { run, journal, completion } = contract;
    histories.push({
      run: { ...run, state: completion?.state, error: completion?.error ?? null },
      steps: journal.steps,
    });
  }
  return histories;
}

/** Every run of the module's agents in the database, newest first, with its journal. */
async function readDatabase(
  values: Record<string, string | boolean | undefined>,
  module: AgentModule,
): Promise<RecordedHistory[]> {
  const backend: RuntimeBackend = await chooseDatabase(values).open({ create: false });
  try {
    const histories: RecordedHistory[] = [];
    for (const agent of module.agents.keys()) {
      for (let offset = 0; ; offset += PAGE) {
        const runs = await backend.listRuns({ agent, limit: PAGE, offset });
        for (const run of runs) histories.push({ run, steps: await backend.loadSteps(run.id) });
        if (runs.length < PAGE) break;
      }
    }
    return histories;
  } finally {
    await backend.close();
  }
}

const PAGE = 500;
