import type { Json } from "../../core/records.ts";
import { byOption, nextSteps, parseJsonArg, printTransitions, withClient } from "../client.ts";
import type { Command } from "../command.ts";
import { DATABASE_OPTIONS } from "../database.ts";
import { jsonLine } from "../format.ts";

/** `cairn signal`: sends a signal to a run (`ctx.waitForSignal`). */
export const signalCommand: Command = {
  name: "signal",
  summary: "send a signal to a run: it resolves the run's ctx.waitForSignal(name)",
  usage:
    "cairn signal <runId> <name> [--payload <json>] [--message-id <id>] [--by <who>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "--payload     the signal's payload as JSON (default null), e.g. --payload '{\"ok\":true}'",
    "--message-id  de-duplicates: a second signal with the same id is acknowledged, not delivered again",
    "              (default: a new random id, printed, so a retry can repeat it)",
    "--by          who sends it (default: local)",
    "A run waiting for the signal resumes; one that does not wait for it yet keeps it in its inbox",
    "and gets it when it calls ctx.waitForSignal(name). This command does not execute the run: the",
    "process that drives it (`cairn run`, `cairn worker`) continues it.",
  ],
  positionals: ["runId", "name"],
  options: {
    payload: { type: "string" },
    "message-id": { type: "string" },
    by: { type: "string" },
    ...DATABASE_OPTIONS,
  },
  async run({ positionals: [runId = "", name = ""], values }, io) {
    const payloadText = values.payload as string | undefined;
    const payload: Json =
      payloadText === undefined ? null : parseJsonArg(payloadText, "--payload", `--payload '{"approved":true}'`);
    const messageId = values["message-id"] as string | undefined;
    const by = byOption(values.by);
    return withClient(values, async ({ runtime, database, made }) => {
      const result = await runtime.signal(runId, name, payload, {
        ...(messageId !== undefined && { messageId }),
        ...(by !== undefined && { by: { kind: "user", id: by } }),
      });
      const what = `signal "${name}" (message ${result.messageId})`;
      if (result.duplicate) {
        io.out(
          `${what} to run ${runId}: a duplicate; the run already received message ${result.messageId}, nothing was delivered again`,
        );
        return 0;
      }
      const run = await runtime.getRun(runId);
      if (result.deliveredTo !== null) {
        io.out(
          `${what} delivered to run ${runId}: it resolved the wait ${result.deliveredTo}, payload ${jsonLine(payload, 60)}`,
        );
        printTransitions(io, made);
        io.out(nextSteps(run, database.hint));
      } else {
        io.out(
          `${what} kept in the inbox of run ${runId}: nothing waits for "${name}" yet; the run gets it when it calls ctx.waitForSignal("${name}")`,
        );
      }
      return 0;
    });
  },
};
