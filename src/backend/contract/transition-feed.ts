import type { TransitionRecord } from "../../core/records.ts";

/**
 * The global transition feed, an optional role of the storage contract (a backend has both
 * methods or neither). Checked by `conformance/transition-feed-conformance.ts`.
 */
export interface TransitionFeed {
  /**
   * Optional global transition feed (with {@link TransitionFeed.latestTransitionCursor}; a backend
   * has both or neither): every transition of every run, in one order that every reader sees the
   * same and that only ever grows at its end, so a reader that keeps the cursor of the last
   * transition it read gets each transition exactly once, across restarts and processes.
   *
   * Returns at most `limit` transitions that come after `after` (`null`: from the first
   * transition stored), each with its cursor and its run's agent and workflow, and `cursor`:
   * where to read on from (the last one's cursor, or `after` — the start for `null` — when there
   * are none). A run's transitions come in id order; transitions committed one after another come
   * in that order; the order of transitions whose transactions overlapped is the backend's, fixed
   * once they are returned. A transition is returned only once nothing can come before it any
   * more (PostgreSQL: once every transaction that began writing before it has ended), so it may
   * show up a little after its commit. Cursors are opaque text (letters, digits, `.`, `-`, `_`); a
   * cursor this feed did not give out may be refused with `InvalidInputError`.
   */
  listTransitionsSince?(request: TransitionFeedRequest): Promise<TransitionFeedPage>;
  /**
   * The cursor after the newest transition {@link TransitionFeed.listTransitionsSince} returns
   * now: reading from it gives only what comes later ("from now"), which may include a transition
   * that committed a moment before but that the feed still held back (see above). On an empty
   * store, the start.
   */
  latestTransitionCursor?(): Promise<string>;
}

/** What `listTransitionsSince` needs. */
export interface TransitionFeedRequest {
  /** The cursor of the last transition read (or `latestTransitionCursor()`); null: from the start. */
  after: string | null;
  /** At most this many transitions (1 or more). */
  limit: number;
}

/** One transition of the global feed. */
export interface TransitionFeedEntry {
  /** Its position: read after it with this. */
  cursor: string;
  transition: TransitionRecord;
  /** The run's agent and workflow (a run's never change). */
  agent: string;
  workflow: string;
}

/** What `listTransitionsSince` returns. */
export interface TransitionFeedPage {
  transitions: TransitionFeedEntry[];
  /** Where to read on from: the last transition's cursor, or the request's position when there are none. */
  cursor: string;
}
