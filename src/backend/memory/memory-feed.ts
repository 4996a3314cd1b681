import { randomBytes } from "node:crypto";
import { InvalidInputError } from "../../core/errors.ts";
import type { RunRecord, TransitionRecord } from "../../core/records.ts";
import type { TransitionFeedPage, TransitionFeedRequest } from "../contract/transition-feed.ts";

/**
 * The transition feed of `InMemoryBackend` (`TransitionFeed`): every transition in the order it
 * was written (one process, nothing concurrent). A transition's cursor is `<feed>.<its 1-based
 * index>`, `<feed>` naming this backend object, so that a cursor of another one (a process that
 * restarted) is refused rather than read as a position of this one. A pruned run's transitions
 * leave holes (`forget`): every later cursor keeps its place.
 */
export class MemoryFeed {
  readonly #entries: (TransitionRecord | undefined)[] = [];
  /** Where each transition is in `#entries`. */
  readonly #places = new Map<TransitionRecord, number>();
  readonly #id = randomBytes(4).toString("hex");

  /** Appends a transition just written. */
  push(transition: TransitionRecord): void {
    this.#places.set(transition, this.#entries.push(transition) - 1);
  }

  /** Leaves holes where these transitions (of a pruned run) were. */
  forget(transitions: readonly TransitionRecord[]): void {
    for (const transition of transitions) {
      const place = this.#places.get(transition);
      if (place !== undefined) this.#entries[place] = undefined;
      this.#places.delete(transition);
    }
  }

  /** `listTransitionsSince`, with each transition's run found in `runs`. */
  page(request: TransitionFeedRequest, runs: ReadonlyMap<string, RunRecord>): TransitionFeedPage {
    const from = request.after === null ? 0 : this.#index(request.after);
    const transitions: TransitionFeedPage["transitions"] = [];
    let at = from;
    while (at < this.#entries.length && transitions.length < request.limit) {
      const transition = this.#entries[at++];
      if (transition === undefined) continue;
      const run = runs.get(transition.runId) as RunRecord;
      transitions.push({ cursor: `${this.#id}.${at}`, transition, agent: run.agent, workflow: run.workflow });
    }
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
