import type { RunFilter } from "../../backend/backend.ts";
import { slotWait } from "../../core/flow-control.ts";
import type { RunRecord } from "../../core/records.ts";
import { isRunState } from "../../core/run-state.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { isDeadLocalOwner } from "../../worker/worker-id.ts";
import { usageError } from "../cli-error.ts";
import { cliRuntime } from "../cli-runtime.ts";
import type { Command } from "../command.ts";
import { chooseDatabase, DATABASE_OPTIONS } from "../database.ts";
import { age, stateLabel, tableBlocks } from "../format.ts";
import { childRunIds, pausedLines } from "../waits.ts";

/** `cairn runs`: the newest runs, one line each. */
export const runsCommand: Command = {
  name: "runs",
  summary: "list runs, newest first",
  usage:
    "cairn runs [--state <state>] [--agent <name>] [--since <when>] [--limit <n>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--state    only runs in this state (e.g. PAUSED, INTERRUPTED, COMPLETED; any case)",
    "--agent    only runs of this agent",
    "--since    only runs created since then: a window back from now (30m, 24h, 7d) or a date and time (2026-12-01, 2026-12-01T09:30Z)",
    "--limit    how many runs to list (default 20)",
    "A RUNNING run whose worker is gone is marked (worker gone): `cairn resume <id>` continues it.",
    "Under each PAUSED run, one line per thing it waits for: a question (`cairn answer`), an approval",
    "with its approvers and expiry (`cairn approve`, `cairn deny`), a signal (`cairn signal`), a timer",
    "or a retry with its due time, a child run; `cairn show <id>` has the details and command lines.",
  ],
  positionals: [],
  options: {
    state: { type: "string" },
    agent: { type: "string" },
    since: { type: "string" },
    limit: { type: "string" },
    ...DATABASE_OPTIONS,
  },
  async run({ values }, io) {
    const stateText = values.state as string | undefined;
    const state = stateText?.toUpperCase();
    if (state !== undefined && !isRunState(state)) {
      throw usageError(
        `--state "${stateText}" is not a run state (one of PENDING, RUNNING, PAUSED, RESUMING, COMPLETED, FAILED, BLOCKED, INTERRUPTED, CANCELLED, …)`,
      );
    }
    const limit = parseLimit(values.limit as string | undefined);
    const now = Date.now();
    const since = values.since === undefined ? undefined : parseSince(values.since as string, now);
    const agent = values.agent as string | undefined;
    const database = chooseDatabase(values);
    const runtime = cliRuntime(undefined, await database.open({ create: false }), "client");
    try {
      const filter = { ...(state !== undefined && { state }), ...(agent !== undefined && { agent }) };
      const runs = await newestSince(runtime, filter, since, limit);
      if (runs.length === 0) {
        const which = [
          state && `in state ${state}`,
          agent && `of agent ${agent}`,
          since !== undefined && `created since ${new Date(since).toISOString()}`,
        ].filter(Boolean);
        io.out(`no runs${which.length > 0 ? ` ${which.join(", ")}` : ""} in ${database.label}`);
        return 0;
      }
      const rows = runs.map((run) => {
        const lost =
          run.leaseOwner !== null &&
          (run.leaseExpiresAt === null || run.leaseExpiresAt <= now || isDeadLocalOwner(run.leaseOwner));
        return [
          run.id,
          `${run.agent}/${run.workflow}`,
          `${stateLabel(run)}${lost ? " (worker gone)" : ""}`,
          age(run.createdAt, now),
          age(run.updatedAt, now),
        ];
      });
      const [header = [], ...blocks] = tableBlocks(["ID", "AGENT/WORKFLOW", "STATE", "CREATED", "UPDATED"], rows, "");
      for (const line of header) io.out(line);
      for (const [i, block] of blocks.entries()) {
        for (const line of block) io.out(line);
        const run = runs[i];
        if (run?.state === "PAUSED") for (const line of await waitingOn(runtime, run, now)) io.out(line);
        const slot = run && slotWait(run, now);
        if (slot) io.out(`    ${slot}`);
        if (run?.state === "NEEDS_RECONCILIATION") {
          // Which effects nobody could settle, and the command that does.
          for (const step of await runtime.backend.loadSteps(run.id)) {
            if (step.effect?.status !== "unknown") continue;
            io.out(
              `  ↳ effect ${step.effect.id} (${step.name}, key ${step.effect.idempotencyKey}) outcome unknown: cairn reconcile ${run.id} ${step.effect.id} --outcome applied|not_applied`,
            );
          }
        }
      }
      return 0;
    } finally {
      await runtime.shutdown();
    }
  },
};

/** What a PAUSED run waits for, one line each. */
async function waitingOn(runtime: Runtime, run: RunRecord, now: number): Promise<string[]> {
  const waits = await runtime.backend.loadWaits(run.id);
  const childStates = new Map<string, string>();
  for (const id of childRunIds(waits)) {
    const child = await runtime.backend.getRun(id);
    if (child) childStates.set(id, stateLabel(child));
  }
  return pausedLines(run, waits, { childStates, now });
}

/** The newest runs of `filter` created at or after `since` (all, without it), at most `limit`. */
async function newestSince(
  runtime: Runtime,
  filter: RunFilter,
  since: number | undefined,
  limit: number,
): Promise<RunRecord[]> {
  if (since === undefined) return runtime.listRuns({ ...filter, limit });
  // Newest first: the first run older than `since` ends the list.
  const runs: RunRecord[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await runtime.listRuns({ ...filter, limit: PAGE, offset });
    for (const run of page) {
      if (run.createdAt < since || runs.length === limit) return runs;
      runs.push(run);
    }
    if (page.length < PAGE) return runs;
  }
}

/** Runs read per query while looking for those created since a time. */
const PAGE = 200;

/** Milliseconds per unit of a `--since` window. */
const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: a window back from `now` (`30m`, `24h`, `7d`) or a date and time; epoch ms. */
function parseSince(text: string, now: number): number {
  const given = text.trim();
  const window = /^(\d+)([mhd])$/.exec(given);
  if (window) return now - Number(window[1]) * (UNITS[window[2] as string] as number);
  const at = /^\d{4}-\d{2}-\d{2}/.test(given) ? Date.parse(given) : Number.NaN;
  if (Number.isNaN(at)) {
    throw usageError(
      `--since "${text}" is neither a window back from now (a whole number of minutes, hours or days: 30m, 24h, 7d) nor a date and time (2026-12-01, 2026-12-01T09:30Z)`,
    );
  }
  return at;
}

function parseLimit(text: string | undefined): number {
  if (text === undefined) return 20;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw usageError(`--limit must be a whole number above 0 (got "${text}")`);
  return n;
}
