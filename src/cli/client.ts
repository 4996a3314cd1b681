import type { Json, RunRecord, TransitionRecord } from "../core/records.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { usageError } from "./cli-error.ts";
import { cliRuntime } from "./cli-runtime.ts";
import { chooseDatabase, type Database } from "./database.ts";
import { type Io, stateLabel, transitionLine } from "./format.ts";

/**
 * What the commands that act on a run from outside (`signal`, `answer`, `approve`, `deny`,
 * `cancel`) share: a client-only runtime (it never executes a run: whichever process drives the
 * run carries on from what they record), the transitions they made, and what happens next.
 */

/** A client-only runtime on the database the options choose, with the transitions it makes. */
export interface Client {
  runtime: Runtime;
  database: Database;
  /** The transitions made through `runtime` so far (PAUSED → RESUMING, PAUSED → CANCELLING, …). */
  made: TransitionRecord[];
}

/** Runs `act` with a {@link Client}, then shuts the runtime down. */
export async function withClient<T>(
  values: { readonly [option: string]: string | boolean | undefined },
  act: (client: Client) => Promise<T>,
): Promise<T> {
  const database = chooseDatabase(values);
  const runtime = cliRuntime(undefined, await database.open({ create: false }), "client");
  const made: TransitionRecord[] = [];
  runtime.onTransition((t) => made.push(t));
  try {
    return await act({ runtime, database, made });
  } finally {
    await runtime.shutdown();
  }
}

/** Prints transitions as `cairn run` does. */
export function printTransitions(io: Io, transitions: readonly TransitionRecord[]): void {
  for (const t of transitions) for (const line of transitionLine(t)) io.out(line);
}

/**
 * What happens to a run after a wait of it was resolved: who continues it, or that it gets the
 * resolution when it reaches the wait.
 */
export function nextSteps(run: RunRecord, hint: string): string {
  switch (run.state) {
    case "RESUMING":
      return `run ${run.id} is RESUMING: the process that drives its runs (the \`cairn run\` that started it, or a \`cairn worker\`) continues it; if none is running: cairn resume ${run.id}${hint}`;
    case "PAUSED":
      return `run ${run.id} is still ${stateLabel(run)}; see \`cairn show ${run.id}${hint}\``;
    default:
      return `run ${run.id} is ${stateLabel(run)}: it gets this when its workflow reaches the wait`;
  }
}

/** A JSON argument, or a usage error naming it with an example of the shell quoting. */
export function parseJsonArg(text: string, what: string, example: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch (cause) {
    throw usageError(
      `${what} is not valid JSON (${(cause as Error).message}); quote it for the shell, e.g. ${example}`,
    );
  }
}

/** A `--by <who>` value: the identity recorded as `user <who>`, or undefined when not given. */
export function byOption(value: string | boolean | undefined): string | undefined {
  if (value === undefined || typeof value !== "string") return undefined;
  if (value.trim() === "") throw usageError("--by needs a name, e.g. --by alice");
  return value;
}
