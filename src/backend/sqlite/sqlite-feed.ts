import { InvalidInputError } from "../../core/errors.ts";
import type { TransitionFeedPage, TransitionFeedRequest } from "../contract/transition-feed.ts";
import { rowToTransition } from "../rows/transition-rows.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import type { Statements } from "./sqlite-statements.ts";

/**
 * The transition feed of `SqliteBackend` (`TransitionFeed`), in commit order: a transition's
 * cursor is `<feed id>.<feed_position>` (see `MIGRATION_V4`), and one statement reads a snapshot
 * that holds every position up to some number.
 */
export class SqliteFeed {
  readonly #c: SqliteConnection;
  readonly #s: Statements;
  /** The file's feed id (`cairn_meta.feed_id`): the first part of its feed cursors. */
  readonly #feedId: string;

  constructor(connection: SqliteConnection, s: Statements) {
    this.#c = connection;
    this.#s = s;
    this.#feedId =
      connection.db.prepare<[], string>("SELECT value FROM cairn_meta WHERE key = 'feed_id'").pluck().get() ?? "";
  }

  listTransitionsSince(request: TransitionFeedRequest): TransitionFeedPage {
    const after = request.after === null ? 0 : this.#feedPosition(request.after);
    return this.#c.read("listTransitionsSince", () => {
      const transitions = this.#s.feedAfter.all(after, Math.max(0, request.limit)).map((row) => ({
        cursor: `${this.#feedId}.${row.feed_position}`,
        transition: rowToTransition(row),
        agent: row.run_agent,
        workflow: row.run_workflow,
      }));
      return { transitions, cursor: transitions.at(-1)?.cursor ?? `${this.#feedId}.${after}` };
    });
  }

  latestTransitionCursor(): string {
    return this.#c.read("latestTransitionCursor", () => `${this.#feedId}.${this.#s.feedLatest.get() ?? 0}`);
  }

  /** The feed position of a cursor of this file. */
  #feedPosition(cursor: string): number {
    const match = /^([0-9a-f]+)\.(\d{1,15})$/.exec(cursor);
    if (!match || match[1] !== this.#feedId) {
      throw new InvalidInputError(`"${cursor}" is not a cursor of the transition feed of "${this.#c.path}"`);
    }
    return Number(match[2]);
  }
}
