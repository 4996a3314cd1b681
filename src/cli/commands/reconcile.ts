import type { Json } from "../../core/records.ts";
import { usageError } from "../cli-error.ts";
import { byOption, parseJsonArg, printTransitions, withClient } from "../client.ts";
import type { Command } from "../command.ts";
import { DATABASE_OPTIONS } from "../database.ts";
import { jsonLine, stateLabel } from "../format.ts";

/** `cairn reconcile`: an operator settles an effect whose outcome is unknown (NEEDS_RECONCILIATION). */
export const reconcileCommand: Command = {
  name: "reconcile",
  summary: "settle an effect of unknown outcome: say whether it happened, and the run goes on",
  usage:
    "cairn reconcile <runId> <effectId> --outcome applied|not_applied [--result <json>] [--receipt <json>] [--by <who>] [--note <text>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "<effectId>  the effect's id (e3, …), listed by `cairn export <runId>` under effects and unresolved",
    "--outcome   applied: it happened (the tool is not run again); not_applied: it did not (it runs",
    "            again under its retry policy, with the same idempotency key). Required.",
    "--result    applied only: the tool's result as the workflow should see it, as JSON (default null)",
    '--receipt   applied only: the proof, as JSON, e.g. --receipt \'{"bankRef":"TX-81"}\'',
    "--by        who decides (default: local)",
    "--note      how you found out, kept with the decision",
    "The run must be NEEDS_RECONCILIATION. It goes RECONCILING; the process that drives its runs",
    "(`cairn worker`) continues it; if none is running: cairn resume <runId>.",
  ],
  positionals: ["runId", "effectId"],
  options: {
    outcome: { type: "string" },
    result: { type: "string" },
    receipt: { type: "string" },
    by: { type: "string" },
    note: { type: "string" },
    ...DATABASE_OPTIONS,
  },
  async run({ positionals: [runId = "", effectId = ""], values }, io) {
    const outcome = values.outcome as string | undefined;
    if (outcome === undefined) {
      throw usageError(
        "--outcome is required: --outcome applied if the effect happened, --outcome not_applied if it did not",
      );
    }
    if (outcome !== "applied" && outcome !== "not_applied") {
      throw usageError(
        `--outcome "${outcome}" is not an outcome; use --outcome applied (it happened) or --outcome not_applied (it did not)`,
      );
    }
    const resultText = values.result as string | undefined;
    const receiptText = values.receipt as string | undefined;
    if (outcome === "not_applied" && (resultText !== undefined || receiptText !== undefined)) {
      throw usageError(
        `${resultText !== undefined ? "--result" : "--receipt"} goes with --outcome applied; an effect that did not happen has no result or receipt`,
      );
    }
    const result: Json | undefined =
      resultText === undefined ? undefined : parseJsonArg(resultText, "--result", `--result '{"transferId":"t-81"}'`);
    const receipt: Json | undefined =
      receiptText === undefined ? undefined : parseJsonArg(receiptText, "--receipt", `--receipt '{"bankRef":"TX-81"}'`);
    const by = byOption(values.by);
    const note = values.note as string | undefined;
    return withClient(values, async ({ runtime, database, made }) => {
      const run = await runtime.reconcile(runId, effectId, {
        outcome,
        ...(result !== undefined && { result }),
        ...(receipt !== undefined && { receipt }),
        ...(by !== undefined && { by }),
        ...(note !== undefined && { note }),
      });
      io.out(
        `reconciled effect ${effectId} of run ${runId} as ${outcome} by user ${by ?? "local"}${receipt !== undefined ? `, receipt ${jsonLine(receipt, 60)}` : ""}${note ? `: ${note}` : ""}`,
      );
      printTransitions(io, made);
      io.out(
        run.state === "RECONCILING"
          ? `run ${runId} is RECONCILING: the process that drives its runs (a \`cairn worker\`) continues it; if none is running: cairn resume ${runId}${database.hint}`
          : `run ${runId} is ${stateLabel(run)}`,
      );
      return 0;
    });
  },
};
