import type { RateLimitStore } from "../contract/rate-limit-store.ts";
import type { PostgresShared } from "./postgres-plans.ts";
import { quoteIdent, type Sql, sql } from "./postgres-sql.ts";

/**
 * The rate limits of `PostgresBackend` (`RateLimitStore`): one row per name, moved on by one
 * upsert per slot (the row lock orders concurrent callers, so every worker gets a distinct slot).
 */
export class PostgresRateLimits implements RateLimitStore {
  readonly #x: PostgresShared;
  readonly #take: Sql;
  readonly #hold: Sql;

  constructor(shared: PostgresShared) {
    this.#x = shared;
    const t = `${quoteIdent(shared.schema)}.rate_limits`;
    this.#take = sql(
      `INSERT INTO ${t} AS r (name, next_at, updated_at) VALUES ($1, $2::float8 + $3::float8, $4)
       ON CONFLICT (name) DO UPDATE SET next_at = greatest(r.next_at, $2::float8) + $3::float8, updated_at = $4
       RETURNING r.next_at - $3::float8 AS slot`,
    );
    this.#hold = sql(
      `INSERT INTO ${t} AS r (name, next_at, updated_at) VALUES ($1, $2::float8, $3)
       ON CONFLICT (name) DO UPDATE SET next_at = greatest(r.next_at, $2::float8), updated_at = $3`,
    );
  }

  async takeRateSlot(name: string, intervalMs: number, now: number): Promise<number> {
    const { db } = this.#x;
    const pool = db.ready();
    const rows = await db.call("takeRateSlot", () =>
      db.query<{ slot: number | string }>(pool, this.#take, [name, now, intervalMs, Math.floor(now)]),
    );
    return Number(rows[0]?.slot);
  }

  async holdRateLimit(name: string, until: number, now: number): Promise<void> {
    const { db } = this.#x;
    const pool = db.ready();
    await db.call("holdRateLimit", () => db.query(pool, this.#hold, [name, until, Math.floor(now)]));
  }
}
