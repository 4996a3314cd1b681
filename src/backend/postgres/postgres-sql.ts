import { createHash } from "node:crypto";
import type pg from "pg";
import { TERMINAL_STATES } from "../../core/run-state.ts";
import { pgDriver } from "./pg-driver.ts";

/** A named SQL statement: prepared once per connection under `name`. */
export interface Sql {
  name: string;
  text: string;
}

/**
 * A named statement for `text`. The name is a digest of the text, so backends on different
 * schemas can share a pool without their statements colliding.
 */
export function sql(text: string): Sql {
  return { name: `cairn_${createHash("sha256").update(text).digest("hex").slice(0, 24)}`, text };
}

/** States as a SQL list of literals (`'PENDING', 'RESUMING'`), in the order given. */
export function stateList(states: Iterable<string>): string {
  return [...states].map((state) => `'${state}'`).join(", ");
}

/**
 * The feed key of a transition being inserted for the run `runId` (a SQL expression): this
 * transaction's id, or the key of the run's previous transition when that is larger. The larger
 * one keeps a run's transitions in id order in the feed: a transaction that got its id early (it
 * locked another run first) and then waited for this run's lock writes after a transaction with a
 * later id. The previous transition must be visible to the statement: the run's row was locked by
 * an earlier statement of this transaction, after whoever wrote that transition committed, and a
 * statement of a READ COMMITTED transaction sees what committed before it began (under REPEATABLE
 * READ the lock would have failed), or, within one statement, the statement checks that it sees
 * the run's last transition (the claim's `start`). Transitions of one run in one statement share
 * the key and keep their ids' order.
 */
export function feedKey(s: string, runId: string): string {
  return `greatest(pg_current_xact_id(),
     (SELECT p.feed_key FROM ${s}.transitions AS p WHERE p.run_id = ${runId} ORDER BY p.id DESC LIMIT 1))`;
}

/**
 * The states of `hasEnded`: the `runs_stop_requested` index predicate's list (migration 2, in the
 * same order) and MOVED after it (issue 24). A query's longer NOT IN list implies the index's
 * shorter one, so the planner still uses the index (`postgres-init.test.ts` reads the plan).
 */
export const ENDED_LIST = stateList([...TERMINAL_STATES].filter((state) => state !== "INTERRUPTED"));

/** `name` as a quoted SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

const INT8 = 20;
const JSON_OID = 114;
const JSONB_OID = 3802;

function int8ToNumber(text: string): number {
  return Number(text);
}

function rawText(text: string): string {
  return text;
}

/**
 * The type parsers of every query this backend runs (passed per query, so a pool handed in by the
 * application keeps its own settings). BIGINT columns hold epoch milliseconds, well inside
 * `Number.MAX_SAFE_INTEGER`, and come back as numbers rather than pg's default strings. JSON
 * columns come back as their text: pg's own parser would turn SQL NULL and JSON `null` into the
 * same `null`, and the row mapping must tell them apart.
 */
export const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === INT8) return int8ToNumber;
    if (oid === JSON_OID || oid === JSONB_OID) return rawText;
    return format === undefined ? pgDriver().types.getTypeParser(oid) : pgDriver().types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig["getTypeParser"],
};
