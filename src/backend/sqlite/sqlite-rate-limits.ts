import type Database from "better-sqlite3";
import type { RateLimitStore } from "../contract/rate-limit-store.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

type Params = { name: string; at: number; interval: number; now: number };

/**
 * The rate limits of `SqliteBackend` (`RateLimitStore`): one row per name, moved on by one upsert
 * per slot under the file's write lock, so processes sharing the file get distinct slots.
 */
export class SqliteRateLimits implements RateLimitStore {
  readonly #c: SqliteConnection;
  readonly #take: Database.Statement<[Params], { slot: number }>;
  readonly #hold: Database.Statement<[Params]>;

  constructor(connection: SqliteConnection) {
    this.#c = connection;
    this.#take = connection.db.prepare(
      `INSERT INTO rate_limits (name, next_at, updated_at) VALUES (@name, @at + @interval, @now)
       ON CONFLICT (name) DO UPDATE SET next_at = max(rate_limits.next_at, @at) + @interval, updated_at = @now
       RETURNING next_at - @interval AS slot`,
    );
    this.#hold = connection.db.prepare(
      `INSERT INTO rate_limits (name, next_at, updated_at) VALUES (@name, @at, @now)
       ON CONFLICT (name) DO UPDATE SET next_at = max(rate_limits.next_at, @at), updated_at = @now`,
    );
  }

  async takeRateSlot(name: string, intervalMs: number, now: number): Promise<number> {
    const row = this.#c.write(false, "takeRateSlot", () =>
      this.#take.get({ name, at: now, interval: intervalMs, now: Math.floor(now) }),
    );
    return Number(row?.slot);
  }

  async holdRateLimit(name: string, until: number, now: number): Promise<void> {
    this.#c.write(false, "holdRateLimit", () => this.#hold.run({ name, at: until, interval: 0, now: Math.floor(now) }));
  }
}
