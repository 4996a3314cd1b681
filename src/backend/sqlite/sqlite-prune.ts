import type Database from "better-sqlite3";
import { TERMINAL_STATES } from "../../core/run-state.ts";
import type { PruneRunsRequest, PruneRunsResult } from "../contract/prune-store.ts";
import { checkPruneRequest } from "../rules/prune-rules.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import type { Stmt } from "./sqlite-statements.ts";

const TERMINAL = [...TERMINAL_STATES].map((state) => `'${state}'`).join(", ");
/** How a step column that refers to a blob begins (`blob-payloads.ts`); the digest follows (64 hex). */
const BLOB_REF = '{"$cairnBlob":"sha256:';

/**
 * The candidates of a batch (`isPrunable` in SQL): in one of the states, of the agent, ended (last
 * transition) before the cutoff, with no open parent and no open child, in id order.
 * `created_at < cutoff` holds for every such run and lets the state index narrow the scan.
 */
const CANDIDATES = `SELECT r.id FROM runs AS r
  JOIN transitions AS t ON t.run_id = r.id AND t.id = r.last_transition_id
  WHERE r.state IN (SELECT value FROM json_each(@states)) AND r.created_at < @cutoff AND t.at < @cutoff
    AND (@agent IS NULL OR r.agent = @agent) AND r.id > @after
    AND NOT EXISTS (SELECT 1 FROM runs AS p WHERE p.id = r.parent_run_id AND p.state NOT IN (${TERMINAL}))
    AND NOT EXISTS (SELECT 1 FROM runs AS c WHERE c.parent_run_id = r.id AND c.state NOT IN (${TERMINAL}))
  ORDER BY r.id LIMIT @limit`;

/** The blobs a run's steps refer to. */
const RUN_BLOBS = `SELECT DISTINCT substr(v, ${BLOB_REF.length + 1}, 64) AS digest FROM (
    SELECT args AS v FROM steps WHERE run_id = ? UNION ALL SELECT result FROM steps WHERE run_id = ?)
  WHERE substr(v, 1, ${BLOB_REF.length}) = '${BLOB_REF}'`;

/**
 * `pruneRuns` of `SqliteBackend` (`PruneStore`): one `BEGIN IMMEDIATE` transaction per batch, which
 * holds the write lock for as long as deleting the batch's rows takes (a few milliseconds for the
 * default batch of 500 runs). The feed's largest position is kept in `cairn_meta` (`feed_floor`)
 * before its transition goes, so that no position is given twice. A blob goes when no step left
 * refers to it: that check reads every step, and only runs when the batch held blobs.
 */
export class SqlitePrune {
  readonly #c: SqliteConnection;
  readonly #candidates: Stmt<[Record<string, unknown>], { id: string }>;
  readonly #runBlobs: Stmt<[string, string], { digest: string }>;
  readonly #deletes: Stmt<[string]>[];
  readonly #keepFloor: Stmt<[]>;
  readonly #blobInUse: Stmt<[string, string]>;
  readonly #deleteBlob: Stmt<[string]>;
  readonly #batch: Database.Transaction<(request: PruneRunsRequest) => string[]>;

  constructor(connection: SqliteConnection) {
    this.#c = connection;
    const db = connection.db;
    const prepare = <P extends unknown[], R = unknown>(text: string) => db.prepare<P, R>(text);
    this.#candidates = prepare(CANDIDATES);
    this.#runBlobs = prepare(RUN_BLOBS);
    this.#deletes = ["transitions", "steps", "waits", "signals", "runs"].map((table) =>
      prepare<[string]>(`DELETE FROM ${table} WHERE ${table === "runs" ? "id" : "run_id"} = ?`),
    );
    this.#keepFloor = prepare(
      `INSERT INTO cairn_meta (key, value) SELECT 'feed_floor', CAST(m AS TEXT)
         FROM (SELECT max(feed_position) AS m FROM transitions) WHERE m IS NOT NULL
       ON CONFLICT (key) DO UPDATE SET value = CAST(max(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER)) AS TEXT)`,
    );
    this.#blobInUse = prepare(
      `SELECT 1 FROM steps WHERE substr(args, 1, ${BLOB_REF.length + 64}) = ? OR substr(result, 1, ${BLOB_REF.length + 64}) = ? LIMIT 1`,
    );
    this.#deleteBlob = prepare("DELETE FROM blobs WHERE digest = ?");
    this.#batch = db.transaction((request: PruneRunsRequest) => this.#deleteBatch(request));
  }

  pruneRuns(request: PruneRunsRequest): PruneRunsResult {
    checkPruneRequest(request);
    if (request.dryRun) return { runIds: this.#c.read("pruneRuns", () => this.#select(request)) };
    return { runIds: this.#c.write(false, "pruneRuns", () => this.#batch.immediate(request)) };
  }

  #select(request: PruneRunsRequest): string[] {
    return this.#candidates
      .all({
        states: JSON.stringify(request.states),
        cutoff: request.endedBefore,
        agent: request.agent ?? null,
        after: request.dryRun ? (request.after ?? "") : "",
        limit: request.limit,
      })
      .map((row) => row.id);
  }

  #deleteBatch(request: PruneRunsRequest): string[] {
    const runIds = this.#select(request);
    if (runIds.length === 0) return runIds;
    const digests = new Set<string>();
    for (const runId of runIds) {
      for (const row of this.#runBlobs.all(runId, runId)) digests.add(row.digest);
    }
    this.#keepFloor.run();
    for (const runId of runIds) for (const remove of this.#deletes) remove.run(runId);
    for (const digest of digests) {
      const ref = `${BLOB_REF}${digest}`;
      if (this.#blobInUse.all(ref, ref).length === 0) this.#deleteBlob.run(digest);
    }
    return runIds;
  }
}
