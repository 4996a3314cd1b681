import { TERMINAL_STATES } from "../../core/run-state.ts";
import type { PruneRunsRequest, PruneRunsResult } from "../contract/prune-store.ts";
import { checkPruneRequest } from "../rules/prune-rules.ts";
import type { PostgresShared } from "./postgres-plans.ts";
import { quoteIdent, type Sql, sql, stateList } from "./postgres-sql.ts";

/**
 * The candidates of a batch (`isPrunable` in SQL), $1 the states, $2 the cutoff, $3 the agent or
 * NULL: ended (last transition) before the cutoff, with no open parent and no open child.
 * `created_at < cutoff` holds for every such run and lets `runs_by_state` narrow the scan.
 */
function candidates(s: string): string {
  const terminal = stateList(TERMINAL_STATES);
  return `SELECT r.id FROM ${s}.runs AS r
    JOIN ${s}.transitions AS t ON t.run_id = r.id AND t.id = r.last_transition_id
    WHERE r.state = ANY ($1::text[]) AND r.created_at < $2::bigint AND t.at < $2::bigint
      AND ($3::text IS NULL OR r.agent = $3::text)
      AND NOT EXISTS (SELECT 1 FROM ${s}.runs AS p WHERE p.id = r.parent_run_id AND p.state NOT IN (${terminal}))
      AND NOT EXISTS (SELECT 1 FROM ${s}.runs AS c WHERE c.parent_run_id = r.id AND c.state NOT IN (${terminal}))`;
}

/** The statements of the prune. */
interface PruneStatements {
  /** The dry run: the candidates after $5, in id order, at most $4. */
  list: Sql;
  /**
   * One batch in one statement: at most $4 candidates locked (`SKIP LOCKED`: a run another
   * transaction holds is left for a later batch), their rows deleted, their ids and the digests
   * their steps and journal entries name returned.
   */
  batch: Sql;
  /**
   * The blobs of digests $1 locked, in digest order: a writer that stores one of them again holds
   * its lock until its step commits (`ON CONFLICT … DO UPDATE`), so the check that follows, a
   * statement of its own, sees that step.
   */
  lockBlobs: Sql;
  /** The blobs of digests $1 that no step or journal entry left names. */
  blobs: Sql;
}

function pruneStatements(s: string): PruneStatements {
  const owned = (table: string) => `DELETE FROM ${s}.${table} WHERE run_id IN (SELECT id FROM doomed)`;
  return {
    list: sql(`${candidates(s)} AND r.id > $5::text ORDER BY r.id LIMIT $4`),
    batch: sql(
      `WITH doomed AS (${candidates(s)} LIMIT $4 FOR UPDATE OF r SKIP LOCKED),
         gone_transitions AS (${owned("transitions")}),
         gone_waits AS (${owned("waits")}),
         gone_signals AS (${owned("signals")}),
         gone_steps AS (${owned("steps")} RETURNING args::text AS a, result::text AS b),
         gone_journal AS (${owned("journal")} RETURNING steps::text AS j),
         gone_runs AS (DELETE FROM ${s}.runs WHERE id IN (SELECT id FROM doomed) RETURNING id),
         payloads AS (SELECT a AS v FROM gone_steps UNION ALL SELECT b FROM gone_steps UNION ALL SELECT j FROM gone_journal)
       SELECT (SELECT coalesce(array_agg(id ORDER BY id), '{}') FROM gone_runs) AS ids,
         (SELECT coalesce(array_agg(DISTINCT m[1]), '{}')
            FROM payloads, regexp_matches(payloads.v, 'sha256:([0-9a-f]{64})', 'g') AS m) AS digests`,
    ),
    lockBlobs: sql(`SELECT digest FROM ${s}.blobs WHERE digest = ANY ($1::text[]) ORDER BY digest FOR UPDATE`),
    blobs: sql(
      `DELETE FROM ${s}.blobs AS b WHERE b.digest = ANY ($1::text[])
         AND NOT EXISTS (SELECT 1 FROM ${s}.journal AS j WHERE strpos(j.steps::text, b.digest) > 0)
         AND NOT EXISTS (SELECT 1 FROM ${s}.steps AS st
                         WHERE strpos(st.args::text, b.digest) > 0 OR strpos(st.result::text, b.digest) > 0)`,
    ),
  };
}

/**
 * `pruneRuns` of `PostgresBackend` (`PruneStore`): one short transaction per batch, which locks
 * only the runs it deletes (`FOR UPDATE … SKIP LOCKED`, never waiting for a worker's transaction),
 * deletes them with their rows in one statement, then locks the blobs they named and deletes those
 * no step left refers to. That check reads every step and journal entry, and only runs when the
 * batch held blobs.
 */
export class PostgresPrune {
  readonly #x: PostgresShared;
  readonly #s: PruneStatements;

  constructor(shared: PostgresShared) {
    this.#x = shared;
    this.#s = pruneStatements(quoteIdent(shared.schema));
  }

  async pruneRuns(request: PruneRunsRequest): Promise<PruneRunsResult> {
    checkPruneRequest(request);
    const { db } = this.#x;
    const pool = db.ready();
    const params = [[...request.states], request.endedBefore, request.agent ?? null, request.limit];
    if (request.dryRun) {
      return db.withClient(
        "pruneRuns",
        async (client) => {
          const rows = await db.query<{ id: string }>(client, this.#s.list, [...params, request.after ?? ""]);
          return { runIds: rows.map((row) => row.id) };
        },
        pool,
      );
    }
    return db.transaction(pool, "pruneRuns", async (client) => {
      const [row] = await db.query<{ ids: string[]; digests: string[] }>(client, this.#s.batch, params);
      if (row && row.digests.length > 0) {
        await db.query(client, this.#s.lockBlobs, [row.digests]);
        await db.query(client, this.#s.blobs, [row.digests]);
      }
      return { runIds: row?.ids ?? [] };
    });
  }
}
