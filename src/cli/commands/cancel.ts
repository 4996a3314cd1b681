import { WaitTimeoutError } from "../../core/errors.ts";
import type { RunRecord } from "../../core/records.ts";
import { isTerminal } from "../../core/run-state.ts";
import type { Runtime } from "../../runtime/runtime.ts";
import { byOption, type Client, printTransitions, withClient } from "../client.ts";
import type { Command } from "../command.ts";
import { DATABASE_OPTIONS } from "../database.ts";
import { type Io, stateLabel } from "../format.ts";

/** `cairn cancel`: asks a run to stop; with `--wait`, waits until it has. */
export const cancelCommand: Command = {
  name: "cancel",
  summary: "cancel a run that has not ended; --wait waits until it is CANCELLED",
  usage:
    "cairn cancel <runId> [--reason <text>] [--by <who>] [--wait] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--reason  why, recorded with the cancellation",
    "--by      who cancels (default: local)",
    "--wait    wait until the run has ended and print how it ended (exit code 0 when CANCELLED)",
    "A PENDING run is CANCELLED at once. A PAUSED or INTERRUPTED run goes CANCELLING and the next",
    "worker to claim it ends it CANCELLED. A running run has its tools' AbortSignal fired by the",
    "worker that holds it, which records it CANCELLED with what was in flight. This command does not",
    "execute the run: the process that drives it (`cairn run`, `cairn worker`) carries the cancel out;",
    "with none running, `cairn resume <runId>` does.",
  ],
  positionals: ["runId"],
  options: {
    reason: { type: "string" },
    by: { type: "string" },
    wait: { type: "boolean" },
    ...DATABASE_OPTIONS,
  },
  async run({ positionals: [runId = ""], values }, io) {
    const by = byOption(values.by);
    const reason = values.reason as string | undefined;
    return withClient(values, async (client) => {
      const { runtime, made } = client;
      const run = await runtime.cancel(runId, {
        ...(by !== undefined && { by }),
        ...(reason !== undefined && { reason }),
      });
      io.out(
        `cancel requested for run ${runId} (${run.agent}/${run.workflow}) by user ${by ?? "local"}: ${reason ?? "no reason given"}`,
      );
      printTransitions(io, made);
      io.out(afterRequest(run, client));
      if (!values.wait) return 0;
      return waitForEnd(runtime, run, io, client);
    });
  },
};

/** What the cancel request left the run in, and who carries it out. */
function afterRequest(run: RunRecord, { database }: Client): string {
  const resume = `if none is running: cairn resume ${run.id}${database.hint}`;
  const held = run.leaseOwner !== null && run.leaseExpiresAt !== null && run.leaseExpiresAt > Date.now();
  if (run.state === "CANCELLED") return `run ${run.id} is CANCELLED: it had not started`;
  if (isTerminal(run.state)) return `run ${run.id} is ${stateLabel(run)}`;
  if (held) {
    return `run ${run.id} is ${stateLabel(run)} and worker ${run.leaseOwner} holds it: that worker stops it (its tools' AbortSignal fires) and records it CANCELLED`;
  }
  return `run ${run.id} is ${stateLabel(run)}: the process that drives its runs (the \`cairn run\` that started it, or a \`cairn worker\`) ends it CANCELLED; ${resume}`;
}

/** How long `--wait` waits before saying that no worker has picked the cancel up yet. */
const NOTICE_MS = 3000;

async function waitForEnd(runtime: Runtime, requested: RunRecord, io: Io, { database }: Client): Promise<number> {
  let ended: RunRecord;
  try {
    ended = await runtime.waitFor(requested.id, { timeoutMs: NOTICE_MS });
  } catch (error) {
    if (!(error instanceof WaitTimeoutError)) throw error;
    const now = await runtime.getRun(requested.id);
    const held = now.leaseOwner !== null && now.leaseExpiresAt !== null && now.leaseExpiresAt > Date.now();
    io.out(
      held
        ? `waiting for worker ${now.leaseOwner} to stop run ${now.id} (${stateLabel(now)})…`
        : `waiting: no worker has claimed run ${now.id} (${stateLabel(now)}) yet; \`cairn resume ${now.id}${database.hint}\` or a \`cairn worker\` for agent "${now.agent}" finishes the cancel…`,
    );
    ended = await runtime.waitFor(requested.id);
  }
  const { transitions } = await runtime.history(requested.id);
  printTransitions(
    io,
    transitions.filter((t) => t.id > requested.lastTransitionId),
  );
  if (ended.state === "CANCELLED") return 0;
  io.err(
    `error: run ${ended.id} ended ${stateLabel(ended)}, not CANCELLED; details: cairn show ${ended.id}${database.hint}`,
  );
  return 1;
}
