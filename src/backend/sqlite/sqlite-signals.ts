import type Database from "better-sqlite3";
import type { SignalRecord } from "../../core/records.ts";
import type { SignalRequest, SignalResult } from "../contract/signal-store.ts";
import { rowToSignal } from "../rows/signal-rows.ts";
import { rowToWait } from "../rows/wait-rows.ts";
import { planSignal, signalTarget } from "../rules/signal-rules.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import { applyPlan, getRun } from "./sqlite-plans.ts";
import type { Statements } from "./sqlite-statements.ts";

type Tx<F extends (...args: never[]) => unknown> = Database.Transaction<F>;

/** The signals of `SqliteBackend` (`SignalStore`): a run's inbox. */
export class SqliteSignals {
  readonly #c: SqliteConnection;
  readonly #s: Statements;
  readonly #deliver: Tx<(request: SignalRequest) => SignalResult>;

  constructor(connection: SqliteConnection, s: Statements) {
    this.#c = connection;
    this.#s = s;
    const file = connection;
    this.#deliver = connection.db.transaction((request: SignalRequest): SignalResult => {
      const run = getRun(s, request.runId);
      const existing = s.getSignal.get(request.runId, request.messageId);
      const openWaits = run ? s.openSignalWaits.all(run.id, request.name).map(rowToWait) : [];
      const counted = run && !existing && request.maxUnread !== undefined && !signalTarget(openWaits, request);
      const { plan, ...result } = planSignal({
        run,
        request,
        existing: existing && rowToSignal(existing),
        openWaits,
        unread: counted ? (s.countUnreadSignals.get(run.id) ?? 0) : undefined,
      });
      applyPlan(s, plan, file);
      return result;
    });
  }

  deliverSignal(request: SignalRequest): SignalResult {
    return this.#c.write(true, "deliverSignal", () => this.#deliver.immediate(request));
  }

  listSignals(runId: string): SignalRecord[] {
    return this.#c.read("listSignals", () => this.#s.listSignals.all(runId).map(rowToSignal));
  }
}
