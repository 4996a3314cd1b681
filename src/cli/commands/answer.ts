import { InvalidInputError } from "../../core/errors.ts";
import type { Json } from "../../core/records.ts";
import { usageError } from "../cli-error.ts";
import { byOption, nextSteps, printTransitions, withClient } from "../client.ts";
import type { Command } from "../command.ts";
import { DATABASE_OPTIONS } from "../database.ts";
import { jsonLine } from "../format.ts";

/** `cairn answer`: answers a question a run asked with `ctx.askUser`. */
export const answerCommand: Command = {
  name: "answer",
  summary: "answer a question a run asked (ctx.askUser)",
  usage: "cairn answer <runId> <waitId> <value> [--by <who>] [--db <path> | --database-url <url> [--schema <name>]]",
  details: [
    "<waitId>  the question's id (w1, w2, …): `cairn runs --state PAUSED` and `cairn show <runId>` list it",
    '<value>   the answer as JSON: \'{"costCenter":"CC-42"}\', 42, true, \'"text"\'. A value that is not JSON',
    '          (and does not start with {, [ or ") is taken as text: `cairn answer … w1 CC-42` answers "CC-42";',
    "          to answer the text 42 or true, quote it as JSON: '\"42\"'",
    "--by      who answers (default: local)",
    "The answer must match the question's schema (shown by `cairn show`); an answer that does not is",
    "refused (exit code 1) and the run keeps waiting. This command does not execute the run: the",
    "process that drives it (`cairn run`, `cairn worker`) continues it.",
  ],
  positionals: ["runId", "waitId", "value"],
  options: { by: { type: "string" }, ...DATABASE_OPTIONS },
  async run({ positionals: [runId = "", waitId = "", text = ""], values }, io) {
    const { value, asJson } = parseAnswer(text);
    const by = byOption(values.by);
    return withClient(values, async ({ runtime, database, made }) => {
      let wait: Awaited<ReturnType<typeof runtime.answer>>;
      try {
        wait = await runtime.answer(runId, waitId, value, by === undefined ? {} : { by });
      } catch (error) {
        if (!(error instanceof InvalidInputError)) throw error;
        io.err(`error: [${error.code}] ${error.message}`);
        // A bare number, boolean or null may have been meant as text.
        if (asJson && (value === null || typeof value === "number" || typeof value === "boolean")) {
          io.err(
            `(${text} was read as JSON, a ${value === null ? "null" : typeof value}; to answer it as text, quote it: '${JSON.stringify(text)}')`,
          );
        }
        io.err(
          `run ${runId} still waits for an answer; see the question and its schema: cairn show ${runId}${database.hint}`,
        );
        return 1;
      }
      io.out(`answered question ${JSON.stringify(wait.name)} (${wait.id}) of run ${runId}: ${jsonLine(value, 60)}`);
      printTransitions(io, made);
      io.out(nextSteps(await runtime.getRun(runId), database.hint));
      return 0;
    });
  },
};

/**
 * The answer: JSON when it parses; else, unless it looks like JSON gone wrong (it starts with
 * `{`, `[` or `"`), the text itself.
 */
export function parseAnswer(text: string): { value: Json; asJson: boolean } {
  try {
    return { value: JSON.parse(text) as Json, asJson: true };
  } catch (cause) {
    if (/^\s*[[{"]/.test(text)) {
      throw usageError(
        `<value> looks like JSON but does not parse (${(cause as Error).message}); quote it for the shell, e.g. '{"costCenter":"CC-42"}'`,
      );
    }
    return { value: text, asJson: false };
  }
}
