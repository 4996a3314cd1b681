import { InvalidInputError } from "../../core/errors.ts";
import { DEFAULT_PRUNE_STATES, parseDuration, pruneStates } from "../../core/retention.ts";
import { isRunState, type RunState } from "../../core/run-state.ts";
import { usageError } from "../cli-error.ts";
import { withClient } from "../client.ts";
import type { Command } from "../command.ts";
import { DATABASE_OPTIONS } from "../database.ts";

/** Ids a dry run lists before it only counts. */
const LISTED = 20;

/** `cairn prune`: deletes ended runs older than a duration, in batches (DESIGN §7, "Retention"). */
export const pruneCommand: Command = {
  name: "prune",
  summary: "delete ended runs older than a duration, with everything they own",
  usage:
    "cairn prune --older-than <duration> [--state <state>]… [--agent <name>] [--batch-size <n>] [--dry-run] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--older-than  how long ago a run ended: 30d, 12h, 90m, 45s (units ms, s, m, h, d, w)",
    `--state       only runs in this ended state; repeat for several (default ${DEFAULT_PRUNE_STATES.join(", ")};`,
    "              INTERRUPTED only when named: recovery or `cairn resume` may take it up again)",
    "--agent       only runs of this agent",
    "--batch-size  runs deleted per transaction (default 500): smaller batches hold locks for less time",
    "--dry-run     count and list the runs that would be deleted; delete nothing",
    "A run goes with its transitions, steps, effects, waits, approvals, signals and the payloads no",
    "other run refers to. An open run is never pruned, nor one whose parent or child is still open.",
  ],
  positionals: [],
  options: {
    "older-than": { type: "string" },
    state: { type: "string", multiple: true },
    agent: { type: "string" },
    "batch-size": { type: "string" },
    "dry-run": { type: "boolean" },
    ...DATABASE_OPTIONS,
  },
  async run({ values }, io) {
    const olderThan = checkOlderThan(values["older-than"]);
    const states = checkStates(values.state as unknown as string[] | string | undefined);
    const agent = values.agent as string | undefined;
    const batchSize = checkBatchSize(values["batch-size"]);
    const dryRun = values["dry-run"] === true;
    return withClient(values, async ({ runtime, database }) => {
      const result = await runtime.prune({
        olderThan,
        ...(states && { states }),
        ...(agent !== undefined && { agent }),
        ...(batchSize !== undefined && { batchSize }),
        dryRun,
      });
      const scope = `${(states ?? DEFAULT_PRUNE_STATES).join(", ")}${agent === undefined ? "" : ` of agent ${agent}`}`;
      const when = new Date(result.endedBefore).toISOString();
      const runs = `${result.pruned} run${result.pruned === 1 ? "" : "s"}`;
      if (dryRun) {
        io.out(`would prune ${runs} (${scope}) that ended before ${when} in ${database.label}; nothing deleted`);
        for (const id of result.runIds.slice(0, LISTED)) io.out(`  ${id}`);
        if (result.pruned > LISTED) io.out(`  … and ${result.pruned - LISTED} more`);
        return 0;
      }
      const batches = `${result.batches} batch${result.batches === 1 ? "" : "es"}`;
      io.out(`pruned ${runs} (${scope}) that ended before ${when} from ${database.label} in ${batches}`);
      return 0;
    });
  },
};

function checkOlderThan(value: string | boolean | undefined): string {
  if (typeof value !== "string") throw usageError("cairn prune needs --older-than <duration>, e.g. --older-than 30d");
  try {
    parseDuration(value, "--older-than");
  } catch (error) {
    if (error instanceof InvalidInputError) throw usageError(error.message);
    throw error;
  }
  return value;
}

function checkStates(value: string[] | string | undefined): RunState[] | undefined {
  if (value === undefined) return undefined;
  const states = [value].flat().map((s) => s.toUpperCase());
  for (const state of states) {
    if (!isRunState(state))
      throw usageError(`--state "${state}" is not a run state (e.g. COMPLETED, FAILED, CANCELLED)`);
  }
  try {
    return [...pruneStates(states)];
  } catch (error) {
    if (error instanceof InvalidInputError) throw usageError(`--state: ${error.message}`);
    throw error;
  }
}

function checkBatchSize(value: string | boolean | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!(Number.isSafeInteger(n) && n >= 1))
    throw usageError(`--batch-size must be a whole number above 0 (got "${String(value)}")`);
  return n;
}
