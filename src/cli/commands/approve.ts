import { ApprovalRefusedError } from "../../core/errors.ts";
import { usageError } from "../cli-error.ts";
import { byOption, nextSteps, printTransitions, withClient } from "../client.ts";
import type { Command, CommandArgs } from "../command.ts";
import { DATABASE_OPTIONS } from "../database.ts";
import type { Io } from "../format.ts";

/** `cairn approve` and `cairn deny`: decide an approval a run asked for. */
export const approveCommand: Command = decisionCommand("approve");
export const denyCommand: Command = decisionCommand("deny");

function decisionCommand(verb: "approve" | "deny"): Command {
  return {
    name: verb,
    summary:
      verb === "approve"
        ? "approve an approval a run waits for (ctx.requestApproval, or a tool that needs one)"
        : "deny an approval a run waits for: the workflow gets ApprovalDeniedError",
    usage: `cairn ${verb} <runId> <approvalId> --by <who> --digest <digest> [--note <text>] [--db <path> | --database-url <url> [--schema <name>]]`,
    details: [
      "<approvalId>  the approval's id (w2, …): `cairn runs --state PAUSED` and `cairn show <runId>` list it",
      "--by          who decides (required); must be one of the approval's approvers when it names any",
      "--digest      the digest of the payload you decide on (required): `cairn show <runId>` prints the",
      "              payload, its digest and this command line ready to copy. A digest of another payload",
      "              is refused, so nobody decides on data they did not see.",
      "--note        a note kept with the decision",
      verb === "approve"
        ? "An expired or already decided approval cannot be approved (exit code 1)."
        : "Unless the workflow catches ApprovalDeniedError, the run ends BLOCKED.",
      "This command does not execute the run: the process that drives it (`cairn run`, `cairn worker`) continues it.",
    ],
    positionals: ["runId", "approvalId"],
    options: {
      by: { type: "string" },
      digest: { type: "string" },
      note: { type: "string" },
      ...DATABASE_OPTIONS,
    },
    run: (args, io) => decide(verb, args, io),
  };
}

async function decide(verb: "approve" | "deny", { positionals, values }: CommandArgs, io: Io): Promise<number> {
  const [runId = "", approvalId = ""] = positionals;
  const by = byOption(values.by);
  const digest = values.digest as string | undefined;
  if (by === undefined) {
    throw usageError(`--by is required: who ${verb === "approve" ? "approves" : "denies"}, e.g. --by alice`);
  }
  if (digest === undefined || digest === "") {
    throw usageError(
      `--digest is required: the digest of the payload you decide on; \`cairn show ${runId}\` prints the payload, its digest and the \`cairn ${verb}\` command line`,
    );
  }
  const note = values.note as string | undefined;
  return withClient(values, async ({ runtime, database, made }) => {
    const options = { by, digest, ...(note !== undefined && { note }) };
    let wait: Awaited<ReturnType<typeof runtime.approve>>;
    try {
      wait =
        verb === "approve"
          ? await runtime.approve(runId, approvalId, options)
          : await runtime.deny(runId, approvalId, options);
    } catch (error) {
      if (!(error instanceof ApprovalRefusedError)) throw error;
      io.err(`error: [${error.code}] ${error.message}`);
      if (error.why !== "expired")
        io.err(`nothing was decided: the approval is still open (cairn show ${runId}${database.hint})`);
      return 1;
    }
    const decided = verb === "approve" ? "approved" : "denied";
    io.out(`${decided} "${wait.name}" (${wait.id}) of run ${runId} as user ${by}${note ? `: ${note}` : ""}`);
    printTransitions(io, made);
    io.out(nextSteps(await runtime.getRun(runId), database.hint));
    return 0;
  });
}
