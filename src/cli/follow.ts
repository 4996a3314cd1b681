import type { RunRecord, StepRecord, TransitionRecord } from "../core/records.ts";
import type { Runtime } from "../runtime/runtime.ts";
import type { Database } from "./database.ts";
import { clock, type Io, json, transitionLine } from "./format.ts";

/**
 * Prints transitions as the runtime makes them: those of one run (`cairn run`, `cairn resume`),
 * or, after {@link followAll}, of every run, each line led by the time and the run id
 * (`cairn worker`). Transitions that arrive before the run id is known (the first one is made
 * inside `runtime.run`) are held back until {@link follow} names the run; `catchUp` prints any
 * made by other processes (an answer, an approval, a cancel). A run's transitions are printed in
 * order: one that comes after a gap (a transition another process made, not read yet) waits for
 * the next `catchUp`.
 */
export class TransitionPrinter {
  readonly #io: Io;
  #runId: string | undefined;
  #all = false;
  #held: TransitionRecord[] = [];
  /** The id of the next transition to print. */
  #next = 1;
  readonly #pending = new Map<number, TransitionRecord>();
  #onPrinted: ((transition: TransitionRecord) => void) | undefined;
  #onSteps: ((steps: StepRecord[]) => void) | undefined;

  /** `onSteps`: given the run's steps at each `catchUp`, before its new transitions are printed. */
  constructor(
    io: Io,
    options: { onPrinted?: (transition: TransitionRecord) => void; onSteps?: (steps: StepRecord[]) => void } = {},
  ) {
    this.#io = io;
    this.#onPrinted = options.onPrinted;
    this.#onSteps = options.onSteps;
  }

  /** Pass to `runtime.onTransition`. */
  readonly listener = (transition: TransitionRecord): void => {
    if (this.#all) {
      // One line each, however long: a worker's output is a log.
      const lead = `${clock(transition.at)}  ${transition.runId}  `;
      this.#io.out(transitionLine(transition, lead, Number.POSITIVE_INFINITY).join(" "));
    } else if (this.#runId === undefined) this.#held.push(transition);
    else if (transition.runId === this.#runId) this.#offer(transition);
  };

  /** Starts printing the transitions of `runId` (those after `afterId`), held-back ones first. */
  follow(runId: string, afterId = 0): void {
    this.#runId = runId;
    this.#next = afterId + 1;
    const held = this.#held;
    this.#held = [];
    for (const t of held) this.listener(t);
  }

  /** Prints every transition from now on, of whichever run, as one line each (nothing is kept). */
  followAll(): void {
    this.#all = true;
    this.#held = [];
  }

  /**
   * Prints the stored transitions of the run that were not printed yet (made by another process);
   * the run as the same read found it.
   */
  async catchUp(runtime: Runtime, runId: string): Promise<RunRecord> {
    const { run, transitions, steps } = await runtime.history(runId);
    this.#onSteps?.(steps);
    for (const t of transitions) this.#offer(t);
    return run;
  }

  #offer(t: TransitionRecord): void {
    if (t.id < this.#next) return;
    this.#pending.set(t.id, t);
    for (let next = this.#pending.get(this.#next); next; next = this.#pending.get(this.#next)) {
      this.#pending.delete(this.#next);
      this.#next++;
      for (const line of transitionLine(next)) this.#io.out(line);
      this.#onPrinted?.(next);
    }
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
