import type { RunRecord, TransitionRecord } from "../core/records.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { Database } from "./database.ts";
import { clock, type Io, json, transitionLine } from "./format.ts";

/**
 * Prints transitions as the runtime makes them: those of one run (`cairn run`, `cairn resume`),
 * or, after {@link followAll}, of every run, each line led by the time and the run id
 * (`cairn worker`). Transitions that arrive before the run id is known (the first one is made
 * inside `runtime.run`) are held back until {@link follow} names the run; `catchUp` prints any
 * made by other processes.
 */
export class TransitionPrinter {
  readonly #io: Io;
  #runId: string | undefined;
  #all = false;
  #held: TransitionRecord[] = [];
  readonly #printed = new Set<number>();

  constructor(io: Io) {
    this.#io = io;
  }

  /** Pass to `runtime.onTransition`. */
  readonly listener = (transition: TransitionRecord): void => {
    if (this.#all) {
      // One line each, however long: a worker's output is a log.
      const lead = `${clock(transition.at)}  ${transition.runId}  `;
      this.#io.out(transitionLine(transition, lead, Number.POSITIVE_INFINITY).join(" "));
    } else if (this.#runId === undefined) this.#held.push(transition);
    else if (transition.runId === this.#runId) this.#print(transition);
  };

  /** Starts printing the transitions of `runId` (those after `afterId`), held-back ones first. */
  follow(runId: string, afterId = 0): void {
    this.#runId = runId;
    for (let id = 1; id <= afterId; id++) this.#printed.add(id);
    const held = this.#held;
    this.#held = [];
    for (const t of held) this.listener(t);
  }

  /** Prints every transition from now on, of whichever run, as one line each (nothing is kept). */
  followAll(): void {
    this.#all = true;
    this.#held = [];
  }

  /** Prints the stored transitions of the run that were not printed yet (made by another process). */
  async catchUp(runtime: Runtime, runId: string): Promise<void> {
    const { transitions } = await runtime.history(runId);
    for (const t of transitions) this.#print(t);
  }

  #print(t: TransitionRecord): void {
    if (this.#printed.has(t.id)) return;
    this.#printed.add(t.id);
    for (const line of transitionLine(t)) this.#io.out(line);
  }
}

/**
 * Prints how a run ended: the output of a COMPLETED run (exit 0), or its state and error on
 * stderr with what to do next (exit 1), repeating the database options the user gave.
 */
export function printOutcome(io: Io, run: RunRecord, database: Pick<Database, "hint">): number {
  if (run.state === "COMPLETED") {
    io.out();
    io.out("result:");
    io.out(json(run.output));
    return 0;
  }
  const why = run.error ? `: ${run.error.code ? `[${run.error.code}] ` : ""}${run.error.message}` : "";
  io.err(`error: run ${run.id} ended ${run.state}${why}`);
  if (run.state === "INTERRUPTED") io.err(`resume it with: cairn resume ${run.id}${database.hint}`);
  else io.err(`details: cairn show ${run.id}${database.hint}`);
  return 1;
}
