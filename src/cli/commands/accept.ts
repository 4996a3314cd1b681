import { AlreadyDecidedError, RunNotCompletedError } from "../../core/errors.ts";
import { byOption, withClient } from "../client.ts";
import type { Command, CommandArgs } from "../command.ts";
import { DATABASE_OPTIONS } from "../database.ts";
import type { Io } from "../format.ts";

/** `cairn accept` and `cairn reject`: an operator's verdict on a COMPLETED run's outcome. */
export const acceptCommand: Command = verdictCommand("accept");
export const rejectCommand: Command = verdictCommand("reject");

function verdictCommand(verb: "accept" | "reject"): Command {
  return {
    name: verb,
    summary:
      verb === "accept"
        ? "accept the outcome of a COMPLETED run (counts toward the cost per accepted job)"
        : "reject the outcome of a COMPLETED run (its cost still counts, for no accepted job)",
    usage: `cairn ${verb} <runId> [--by <who>] [--note <text>] [--db <path> | --database-url <url> [--schema <name>]]`,
    details: [
      `--by    who ${verb}s (default: local)`,
      "--note  why, kept with the verdict",
      "The verdict is kept apart from the run's state (COMPLETED stays COMPLETED): completion says the",
      "workflow finished, acceptance says its outcome was what the job needed. A run gets one verdict;",
      "a second accept or reject is refused (exit code 1), and so is a run that is not COMPLETED.",
      "`cairn cost` divides the cost of all runs by the accepted ones.",
    ],
    positionals: ["runId"],
    options: { by: { type: "string" }, note: { type: "string" }, ...DATABASE_OPTIONS },
    run: (args, io) => decide(verb, args, io),
  };
}

async function decide(verb: "accept" | "reject", { positionals, values }: CommandArgs, io: Io): Promise<number> {
  const [runId = ""] = positionals;
  const by = byOption(values.by);
  const note = values.note as string | undefined;
  return withClient(values, async ({ runtime, database }) => {
    const options = { ...(by !== undefined && { by }), ...(note !== undefined && { note }) };
    try {
      const run = verb === "accept" ? await runtime.accept(runId, options) : await runtime.reject(runId, options);
      const verdict = run.acceptance;
      io.out(
        `${verb === "accept" ? "accepted" : "rejected"} run ${runId} (${run.agent}/${run.workflow}) as user ${verdict?.by.id ?? by ?? "local"}${note ? `: ${note}` : ""}`,
      );
      io.out(`see the cost per accepted job: cairn cost${database.hint}`);
      return 0;
    } catch (error) {
      if (!(error instanceof RunNotCompletedError || error instanceof AlreadyDecidedError)) throw error;
      io.err(`error: [${error.code}] ${error.message}`);
      io.err(
        error instanceof AlreadyDecidedError
          ? `nothing was recorded: \`cairn export ${runId}${database.hint}\` shows the verdict it has`
          : `nothing was recorded: only a COMPLETED run's outcome can be accepted or rejected (cairn show ${runId}${database.hint})`,
      );
      return 1;
    }
  });
}
