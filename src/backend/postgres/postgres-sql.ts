import { createHash } from "node:crypto";

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
