import type Database from "better-sqlite3";
import { LeaseLostError } from "../../core/errors.ts";
import type { RunRecord, WaitRecord } from "../../core/records.ts";
import type { ResolveWaitRequest, ResolveWaitResult, SuspendRequest, SuspendResult } from "../contract/wait-store.ts";
import { rowToSignal } from "../rows/signal-rows.ts";
import { rowToWait } from "../rows/wait-rows.ts";
import { planChildSweep } from "../rules/child-sweep-rules.ts";
import { planDue, planResolveWait, planSuspend } from "../rules/wait-rules.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import { applyPlan, getRun, type PlanTarget } from "./sqlite-plans.ts";
import type { Statements } from "./sqlite-statements.ts";

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/**
 * The waits of `SqliteBackend` (`WaitStore`, and the sweep of child waits, `ChildWaitSweep`):
 * pausing a run, resolving its waits from outside or when they come due.
 */
export class SqliteWaits {
  readonly #c: SqliteConnection;
  readonly #s: Statements;
  readonly #suspend: Tx<(request: SuspendRequest) => SuspendResult>;
  readonly #resolveWait: Tx<(request: ResolveWaitRequest) => ResolveWaitResult>;
  readonly #fireDue: Tx<(now: number, limit: number) => WaitRecord[]>;
  /** The sweep of child waits, for the runs given (found by `endedChildWaitRuns` before the write). */
  readonly #sweep: Tx<(runIds: readonly string[], now: number) => WaitRecord[]>;

  constructor(connection: SqliteConnection, s: Statements) {
    this.#c = connection;
    this.#s = s;
    const { db } = connection;
    const file = connection;
    this.#suspend = db.transaction((request: SuspendRequest) => suspendIn(s, file, request));
    this.#resolveWait = db.transaction((request: ResolveWaitRequest): ResolveWaitResult => {
      const wait = s.getWait.get(request.runId, request.waitId);
      const { plan, ...result } = planResolveWait({
        run: getRun(s, request.runId),
        wait: wait && rowToWait(wait),
        request,
      });
      applyPlan(s, plan, file);
      return result;
    });
    this.#fireDue = db.transaction((now: number, limit: number) => fireDueIn(s, file, now, limit));
    this.#sweep = db.transaction((runIds: readonly string[], now: number) => sweepIn(s, file, runIds, now));
  }

  /** In the next group commit (`SqliteConnection.group`), with the other writes of its turn. */
  suspend(request: SuspendRequest): Promise<SuspendResult> {
    return this.#c.group(true, "suspend", () => this.#suspend.immediate(request));
  }

  loadWaits(runId: string): WaitRecord[] {
    return this.#c.read("loadWaits", () => this.#s.listWaits.all(runId).map(rowToWait));
  }

  resolveWait(request: ResolveWaitRequest): ResolveWaitResult {
    // What `decide` throws is its refusal, not a storage failure: it reaches the caller as thrown.
    let refusal: { error: unknown } | undefined;
    const decide: ResolveWaitRequest["decide"] = (wait, run) => {
      try {
        return request.decide(wait, run);
      } catch (error) {
        refusal = { error };
        throw error;
      }
    };
    try {
      return this.#c.write(true, "resolveWait", () => this.#resolveWait.immediate({ ...request, decide }));
    } catch (error) {
      throw refusal ? refusal.error : error;
    }
  }

  fireDueWaits(now: number, limit: number): WaitRecord[] {
    return this.#c.write(true, "fireDueWaits", () => this.#fireDue.immediate(now, limit));
  }

  nextDueAt(): number | null {
    return this.#c.read("nextDueAt", () => this.#s.nextDueAt.get() ?? null);
  }

  /**
   * A read finds the runs to sweep (none, nearly always) without taking the write lock; only when
   * there are some does a write transaction read them again and resolve their waits.
   */
  resolveEndedChildWaits(now: number, limit: number): WaitRecord[] {
    const runIds = this.#c.read("resolveEndedChildWaits", () => this.#s.endedChildWaitRuns.all(limit));
    if (runIds.length === 0) return [];
    return this.#c.write(true, "resolveEndedChildWaits", () => this.#sweep.immediate(runIds, now));
  }
}

/** `suspend`, inside the write transaction. */
function suspendIn(s: Statements, file: PlanTarget, request: SuspendRequest): SuspendResult {
  const run = getRun(s, request.runId);
  if (!run) throw new LeaseLostError(`run ${request.runId} does not exist`);
  const stored = s.listWaits.all(run.id).map(rowToWait);
  // Only the children that blocked child waits name: those are the ones planSuspend looks at.
  const blocked = new Set(request.blockedOn);
  const childIds = new Set(
    [...stored, ...request.waits].filter((w) => w.kind === "child" && blocked.has(w.id)).map((w) => w.name),
  );
  const { plan, result } = planSuspend({
    run,
    request,
    stored,
    inbox: s.unconsumedSignals.all(run.id).map(rowToSignal),
    children: [...childIds].map((id) => getRun(s, id)).filter((r): r is RunRecord => r !== undefined),
  });
  applyPlan(s, plan, file);
  return result as SuspendResult;
}

/** `fireDueWaits`, inside the write transaction. */
function fireDueIn(s: Statements, file: PlanTarget, now: number, limit: number): WaitRecord[] {
  const byRun = new Map<string, WaitRecord[]>();
  for (const row of s.dueWaits.all(now, limit)) {
    const wait = rowToWait(row);
    byRun.set(wait.runId, [...(byRun.get(wait.runId) ?? []), wait]);
  }
  const resolved: WaitRecord[] = [];
  for (const [runId, due] of byRun) {
    // A wait's run exists (foreign key).
    const run = getRun(s, runId) as RunRecord;
    const result = planDue({ run, due, now, versions: run.versions });
    applyPlan(s, result.plan, file);
    resolved.push(...result.resolved);
  }
  return resolved;
}

/** The sweep of child waits, inside the write transaction. */
function sweepIn(s: Statements, file: PlanTarget, runIds: readonly string[], now: number): WaitRecord[] {
  const resolved: WaitRecord[] = [];
  for (const runId of runIds) {
    // Read again under the write lock: the candidates were read before it.
    const run = getRun(s, runId);
    if (!run) continue;
    const waits = s.openChildWaits.all(run.id).map(rowToWait);
    const children = waits.map((w) => getRun(s, w.name)).filter((c): c is RunRecord => c !== undefined);
    const result = planChildSweep({ run, waits, children, at: now });
    applyPlan(s, result.plan, file);
    resolved.push(...result.resolved);
  }
  return resolved;
}
