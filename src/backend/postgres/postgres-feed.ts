import { InvalidInputError } from "../../core/errors.ts";
import type { TransitionFeedPage, TransitionFeedRequest } from "../contract/transition-feed.ts";
import { rowToTransition, type TransitionRow } from "../rows/transition-rows.ts";
import type { PostgresShared } from "./postgres-plans.ts";

/**
 * The transition feed of `PostgresBackend` (`TransitionFeed`): ordered by (feed_key, run id,
 * transition id), and only as far as the snapshot's xmin: see `feedKey` in `postgres-sql.ts` and
 * DESIGN §7. A cursor is `<feed_key>.<id>.<run id in base64url>`; the start is `0.0.`, before the
 * rows migration 4 found (feed_key 0).
 */
export class PostgresFeed {
  readonly #x: PostgresShared;

  constructor(shared: PostgresShared) {
    this.#x = shared;
  }

  async listTransitionsSince(request: TransitionFeedRequest): Promise<TransitionFeedPage> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    const after = parseFeedCursor(request.after ?? FEED_START);
    return db.call("listTransitionsSince", async () => {
      const rows = await db.query<TransitionRow & { feed_key: string; run_agent: string; run_workflow: string }>(
        pool,
        statements.feedAfter,
        [after.key, after.runId, after.id, Math.max(0, request.limit)],
      );
      const transitions = rows.map((row) => ({
        cursor: feedCursor(row.feed_key, row.run_id, row.id),
        transition: rowToTransition(row),
        agent: row.run_agent,
        workflow: row.run_workflow,
      }));
      return { transitions, cursor: transitions.at(-1)?.cursor ?? request.after ?? FEED_START };
    });
  }

  async latestTransitionCursor(): Promise<string> {
    const { db, statements } = this.#x;
    const pool = db.ready();
    return db.call("latestTransitionCursor", async () => {
      const [row] = await db.query<{ feed_key: string; run_id: string; id: number }>(pool, statements.feedLatest, []);
      return row ? feedCursor(row.feed_key, row.run_id, row.id) : FEED_START;
    });
  }
}

/** The feed's start: before every transition (those that migration 4 found have feed_key 0). */
const FEED_START = "0.0.";

function feedCursor(key: string, runId: string, id: number): string {
  return `${key}.${id}.${Buffer.from(runId, "utf8").toString("base64url")}`;
}

function parseFeedCursor(cursor: string): { key: string; runId: string; id: number } {
  const match = /^(\d{1,20})\.(\d{1,10})\.([\w-]*)$/.exec(cursor);
  const [, key = "", id = "", runId = ""] = match ?? [];
  if (!match || BigInt(key) >= 2n ** 64n || Number(id) > 2 ** 31 - 1) {
    throw new InvalidInputError(`"${cursor}" is not a cursor of a PostgreSQL transition feed`);
  }
  return { key, id: Number(id), runId: Buffer.from(runId, "base64url").toString("utf8") };
}
