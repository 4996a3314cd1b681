import { randomBytes } from "node:crypto";
import { InvalidInputError } from "../../core/errors.ts";
import type { RunRecord, TransitionRecord } from "../../core/records.ts";
import type { TransitionFeedPage, TransitionFeedRequest } from "../contract/transition-feed.ts";

/**
 * The transition feed of `InMemoryBackend` (`TransitionFeed`): every transition in the order it
 * was written (one process, nothing concurrent). A transition's cursor is `<feed>.<its 1-based
 * index>`, `<feed>` naming this backend object, so that a cursor of another one (a process that
 * restarted) is refused rather than read as a position of this one.
 */
export class MemoryFeed {
  readonly #entries: TransitionRecord[] = [];
  readonly #id = randomBytes(4).toString("hex");

  /** Appends a transition just written. */
  push(transition: TransitionRecord): void {
    this.#entries.push(transition);
  }

  /** `listTransitionsSince`, with each transition's run found in `runs`. */
  page(request: TransitionFeedRequest, runs: ReadonlyMap<string, RunRecord>): TransitionFeedPage {
    const from = request.after === null ? 0 : this.#index(request.after);
    const transitions = this.#entries.slice(from, from + Math.max(0, request.limit)).map((transition, i) => {
      const run = runs.get(transition.runId) as RunRecord;
      return { cursor: `${this.#id}.${from + i + 1}`, transition, agent: run.agent, workflow: run.workflow };
    });
    return { transitions, cursor: transitions.at(-1)?.cursor ?? `${this.#id}.${from}` };
  }

  /** `latestTransitionCursor`. */
  latest(): string {
    return `${this.#id}.${this.#entries.length}`;
  }

  /** How many transitions come before a cursor of this feed. */
  #index(cursor: string): number {
    const match = /^([0-9a-f]+)\.(\d+)$/.exec(cursor);
    const index = match?.[1] === this.#id ? Number(match[2]) : Number.NaN;
    if (!(index <= this.#entries.length)) {
      throw new InvalidInputError(`"${cursor}" is not a cursor of this backend's transition feed`);
    }
    return index;
  }
}
