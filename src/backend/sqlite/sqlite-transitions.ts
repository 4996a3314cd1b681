import type Database from "better-sqlite3";
import { InvalidInputError } from "../../core/errors.ts";
import type { RunRecord, TransitionRecord } from "../../core/records.ts";
import type { TransitionRequest } from "../contract/transition-store.ts";
import { rowToRun } from "../rows/run-rows.ts";
import { encodeStep } from "../rows/step-rows.ts";
import { rowToTransition } from "../rows/transition-rows.ts";
import { rowToWait } from "../rows/wait-rows.ts";
import { type EndContext, planTransition } from "../rules/ending-rules.ts";
import { hasEnded } from "../rules/plan.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import { saveStepFenced } from "./sqlite-journal.ts";
import { applyPlan, getRun } from "./sqlite-plans.ts";
import type { Statements } from "./sqlite-statements.ts";

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/** The transitions of `SqliteBackend` (`TransitionStore`): a run's moves, with what its end does. */
export class SqliteTransitions {
  readonly #c: SqliteConnection;
  readonly #s: Statements;
  readonly #transition: Tx<(request: TransitionRequest) => { run: RunRecord; transition: TransitionRecord }>;

  /** `inlineLimitBytes` is the backend's (steps written with a transition go out of line like any). */
  constructor(connection: SqliteConnection, s: Statements, inlineLimitBytes: number) {
    this.#c = connection;
    this.#s = s;
    const file = connection;
    this.#transition = connection.db.transaction((request: TransitionRequest) => {
      const run = getRun(s, request.runId);
      const end = run && hasEnded(request.to) ? endContext(s, run) : undefined;
      const { plan, ...result } = planTransition(end ? { run, request, end } : { run, request });
      applyPlan(s, plan, file);
      // Under the transition's fence (checked by the planner), with the epoch it leaves the run at.
      for (const step of request.steps ?? []) {
        if (step.runId !== request.runId) throw new InvalidInputError("a transition's steps must be steps of its run");
        saveStepFenced(s, step, encodeStep(step, inlineLimitBytes), result.run.epoch);
      }
      return result;
    });
  }

  /** In the next group commit (`SqliteConnection.group`), with the other writes of its turn. */
  transition(request: TransitionRequest): Promise<{ run: RunRecord; transition: TransitionRecord }> {
    return this.#c.group(true, "transition", () => this.#transition.immediate(request));
  }

  listTransitions(runId: string): TransitionRecord[] {
    return this.#c.read("listTransitions", () => this.#s.listTransitions.all(runId).map(rowToTransition));
  }
}

/** What `planEnd` needs of a run that ends with this transition (see `planTransition`). */
function endContext(s: Statements, run: RunRecord): EndContext {
  const parent = run.parentRunId === null ? undefined : getRun(s, run.parentRunId);
  const parentWait = parent && s.openChildWait.get(parent.id, run.id);
  return {
    openWaits: s.openWaits.all(run.id).map(rowToWait),
    parent,
    parentWait: parentWait && rowToWait(parentWait),
    children: s.openChildren.all(run.id).map(rowToRun),
  };
}
