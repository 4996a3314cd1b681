import type { TransitionEventData } from "../api/stream-events.ts";
import type { RuntimeBackend } from "../backend/backend.ts";
import { InvalidInputError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { RunRecord, TransitionRecord } from "../core/records.ts";
import { RUN_STATES, type RunState } from "../core/run-state.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { transitionEventData } from "./run-stream.ts";

/**
 * The transitions of every run, for `GET /api/events`. Every transition gets the next number
 * (`seq`) of this feed; the last `capacity` are kept for the clients of this server. The feed
 * watches while a client is connected and `lingerMs` after the last one left (so reconnects find
 * no gap). Where the transitions come from depends on the backend:
 *
 * - A backend with the global transition feed (`listTransitionsSince`, all built-in backends):
 *   the feed reads it on from where it stands — at once when this process records a transition,
 *   and every `pollIntervalMs` for those of other processes — so it gets every transition of every
 *   process once, in the backend's order. An event's id is the backend's cursor after it, so a
 *   client that reconnects with `Last-Event-ID` gets exactly what it missed, from this server or
 *   after a restart: what is kept comes from memory, what is older is read from the backend
 *   (`capacity` transitions at most).
 * - Any other backend: transitions this process records arrive through `runtime.onTransition`;
 *   those of other processes are found by polling: the runs in a state that can still move (every
 *   state but COMPLETED, FAILED, BLOCKED, CANCELLED, COMPENSATED; at most `maxWatchedRuns`), the
 *   newest 100 runs, and the runs that were open at the previous look, each compared by
 *   `lastTransitionId` with what was sent; a run that moved has its new transitions read. A run's
 *   transitions are sent in id order without gaps (one heard of out of order makes its run be read
 *   again). Event ids are `<boot>.<seq>`: only this process, while it keeps them, can resume them.
 *   A transition made by another process while nobody watched, of a run that was finished (FAILED
 *   resumed) and is older than the newest 100, is found only once it is open again.
 */

/** One transition of the feed. */
export interface FeedEntry {
  seq: number;
  /** The backend feed's cursor after this transition (a backend with a feed): the event's id. */
  cursor?: string;
  data: TransitionEventData;
}

/** Where a client resumes: the transitions to send first, then the feed from after `seq`. */
export interface FeedResume {
  backlog: FeedEntry[];
  seq: number;
}

type BackendFeed = Required<Pick<RuntimeBackend, "listTransitionsSince" | "latestTransitionCursor">>;

/** Options of {@link RunFeed}. */
export interface RunFeedOptions {
  /** @default 1000 */
  pollIntervalMs?: number;
  /** @default 60000 */
  lingerMs?: number;
  /** Transitions kept for clients that reconnect. @default 10000 */
  capacity?: number;
  /** Open runs looked at per poll, at most. @default 5000 */
  maxWatchedRuns?: number;
  logger?: Logger;
}

const FINAL: ReadonlySet<RunState> = new Set(["COMPLETED", "FAILED", "BLOCKED", "CANCELLED", "COMPENSATED", "MOVED"]);
const MOVABLE: readonly RunState[] = RUN_STATES.filter((s) => !FINAL.has(s));
const RECENT = 100;
const PAGE = 500;
/** Runs whose last transition id is remembered, at most (the oldest remembered is forgotten first). */
const KNOWN_RUNS = 50_000;

/** The all-runs transition feed of one server. */
export class RunFeed {
  readonly #runtime: Runtime;
  readonly #pollMs: number;
  readonly #lingerMs: number;
  readonly #capacity: number;
  readonly #maxWatched: number;
  readonly #logger: Logger | undefined;
  /** The backend's transition feed, when it has one. */
  readonly #source: BackendFeed | undefined;
  readonly #entries: FeedEntry[] = [];
  #nextSeq = 1;
  /** The first seq after the last gap (a time nobody watched): older ids cannot be resumed. */
  #resumableAfter = 0;
  readonly #known = new Map<string, number>();
  #open = new Set<string>();
  readonly #listeners = new Set<() => void>();
  #active = false;
  #ready: Promise<void> = Promise.resolve();
  #baselineAt = 0;
  #queue: Promise<void> = Promise.resolve();
  #timer: ReturnType<typeof setInterval> | undefined;
  #linger: ReturnType<typeof setTimeout> | undefined;
  #stopListening: (() => void) | undefined;
  /** With a backend feed: its cursor after the last transition read (undefined until known). */
  #cursor: string | undefined;
  /** With a backend feed: its cursor before the first transition kept. */
  #startCursor: string | undefined;
  /** With a backend feed: the seq of each kept transition, by its cursor. */
  readonly #seqOf = new Map<string, number>();
  #readQueued = false;

  constructor(runtime: Runtime, options: RunFeedOptions = {}) {
    this.#runtime = runtime;
    this.#pollMs = options.pollIntervalMs ?? 1000;
    this.#lingerMs = options.lingerMs ?? 60_000;
    this.#capacity = options.capacity ?? 10_000;
    this.#maxWatched = options.maxWatchedRuns ?? 5000;
    this.#logger = options.logger;
    const backend = runtime.backend;
    if (backend.listTransitionsSince && backend.latestTransitionCursor) {
      this.#source = {
        listTransitionsSince: backend.listTransitionsSince.bind(backend),
        latestTransitionCursor: backend.latestTransitionCursor.bind(backend),
      };
    }
  }

  /** The seq of the newest transition (0 before any). */
  get lastSeq(): number {
    return this.#nextSeq - 1;
  }

  /**
   * Starts watching (if not already) and calls `listener` after each new transition; resolves
   * once the feed knows where every run stands. Returns the function that stops listening.
   */
  async subscribe(listener: () => void): Promise<() => void> {
    clearTimeout(this.#linger);
    this.#listeners.add(listener);
    if (!this.#active) this.#activate();
    await this.#ready;
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) {
        this.#linger = setTimeout(() => this.#deactivate(), this.#lingerMs);
        this.#linger.unref?.();
      }
    };
  }

  /** The transitions after `seq`, or undefined when they are not all kept (a gap or too old). */
  entriesAfter(seq: number): FeedEntry[] | undefined {
    if (seq > this.lastSeq || seq < this.#resumableAfter) return undefined;
    const first = this.#entries[0]?.seq ?? this.#nextSeq;
    if (seq < first - 1) return undefined;
    return this.#entries.slice(seq - first + 1);
  }

  /**
   * Where a client that sends `lastId` (a Last-Event-ID) resumes, or undefined when it cannot:
   * none, an id of another server process (without a backend feed), one of another store, or one
   * further behind than `capacity` transitions.
   */
  async resume(lastId: string | undefined, boot: string): Promise<FeedResume | undefined> {
    if (lastId === undefined) return undefined;
    const id = lastId.trim();
    if (!this.#source) {
      const match = /^([\w-]+)\.(\d+)$/.exec(id);
      const seq = match?.[1] === boot ? Number(match[2]) : Number.NaN;
      return Number.isNaN(seq) || this.entriesAfter(seq) === undefined ? undefined : { backlog: [], seq };
    }
    const kept = this.#keptSeq(id);
    if (kept !== undefined) return { backlog: [], seq: kept };
    // Read on first: the id may come from a server that had read further than this feed has.
    await this.#enqueue(() => this.#read());
    const now = this.#keptSeq(id);
    if (now !== undefined) return { backlog: [], seq: now };
    // Older than what is kept: what came between it and what is kept comes from the backend.
    const backlog: FeedEntry[] = [];
    let after = id;
    try {
      while (backlog.length < this.#capacity) {
        const page = await this.#source.listTransitionsSince({ after, limit: PAGE });
        for (const entry of page.transitions) {
          backlog.push({ seq: 0, cursor: entry.cursor, data: transitionEventData(entry.transition, entry) });
          const seq = this.#keptSeq(entry.cursor);
          if (seq !== undefined) return { backlog, seq };
        }
        if (page.transitions.length < PAGE) return undefined;
        after = page.cursor;
      }
    } catch (error) {
      if (!(error instanceof InvalidInputError)) {
        this.#logger?.warn(
          { error: String(error) },
          "the all-runs event feed could not resume a client; it starts from now",
        );
      }
    }
    return undefined;
  }

  /** The id of the event at `seq` (the last transition sent, or `ready` before the first). */
  idAt(seq: number, boot: string): string {
    const first = this.#entries[0]?.seq ?? this.#nextSeq;
    const cursor = seq === first - 1 ? this.#startCursor : this.#entries[seq - first]?.cursor;
    return this.#source && cursor !== undefined ? cursor : `${boot}.${seq}`;
  }

  /** The id of a transition's event. */
  static idOf(entry: FeedEntry, boot: string): string {
    return entry.cursor ?? `${boot}.${entry.seq}`;
  }

  /** Stops watching at once. */
  close(): void {
    clearTimeout(this.#linger);
    this.#listeners.clear();
    this.#deactivate();
  }

  #activate(): void {
    this.#active = true;
    this.#baselineAt = Date.now();
    // Whatever happened while nobody watched is not in the buffer: ids given before cannot resume.
    // A number is skipped so that no id given before this start equals one given after it.
    this.#entries.length = 0;
    this.#nextSeq += 1;
    this.#resumableAfter = this.lastSeq;
    if (this.#source) {
      // From now: what came before is read from the backend for the clients that resume.
      this.#seqOf.clear();
      this.#cursor = undefined;
      this.#startCursor = undefined;
      this.#readQueued = false;
      this.#stopListening = this.#runtime.onTransition(() => this.#readSoon());
      this.#ready = this.#enqueue(() => this.#read());
      this.#timer = setInterval(() => this.#readSoon(), this.#pollMs);
      this.#timer.unref?.();
      return;
    }
    this.#stopListening = this.#runtime.onTransition((t, run) => {
      void this.#enqueue(() => this.#heard(t, run));
    });
    this.#ready = this.#enqueue(() => this.#look(true));
    this.#timer = setInterval(() => void this.#enqueue(() => this.#look(false)), this.#pollMs);
    this.#timer.unref?.();
  }

  #deactivate(): void {
    if (!this.#active) return;
    this.#active = false;
    clearInterval(this.#timer);
    this.#stopListening?.();
    this.#known.clear();
    this.#open.clear();
  }

  /** Runs `work` after what is queued: one look or sync at a time, so nothing is sent twice. */
  #enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.#queue.then(async () => {
      if (!this.#active) return;
      await work().catch((error: unknown) =>
        this.#logger?.warn({ error: String(error) }, "the all-runs event feed could not read the runs; it tries again"),
      );
    });
    this.#queue = next;
    return next;
  }

  /** Reads the backend feed soon (once, however many ask before it runs). */
  #readSoon(): void {
    if (this.#readQueued) return;
    this.#readQueued = true;
    void this.#enqueue(() => {
      this.#readQueued = false;
      return this.#read();
    });
  }

  /** Reads the backend feed on from where it stands; the first read only learns where that is. */
  async #read(): Promise<void> {
    const source = this.#source as BackendFeed;
    if (this.#cursor === undefined) {
      // The backend opens with the runtime (as the runtime's own reads do).
      await this.#runtime.start();
      const latest = await source.latestTransitionCursor();
      this.#cursor = latest;
      this.#startCursor = latest;
      return;
    }
    for (;;) {
      const page = await source.listTransitionsSince({ after: this.#cursor, limit: PAGE });
      for (const entry of page.transitions) this.#push(entry.transition, entry, entry.cursor);
      this.#cursor = page.cursor;
      if (page.transitions.length < PAGE) return;
    }
  }

  /** The seq of the kept transition whose cursor this is (the one before the first kept: its seq - 1). */
  #keptSeq(cursor: string): number | undefined {
    if (cursor === this.#startCursor) return (this.#entries[0]?.seq ?? this.#nextSeq) - 1;
    return this.#seqOf.get(cursor);
  }

  /** A transition this process recorded. */
  async #heard(t: TransitionRecord, run: RunRecord): Promise<void> {
    const known = this.#known.get(run.id);
    if (known !== undefined && t.id <= known) return;
    if ((known ?? 0) === t.id - 1) {
      this.#push(t, run);
      this.#remember(run.id, t.id);
      return;
    }
    await this.#sync(run, known);
  }

  /** Looks at the runs that may have moved; the first look only learns where they stand. */
  async #look(initial: boolean): Promise<void> {
    const runs = new Map<string, RunRecord>();
    const open = new Set<string>();
    for (let offset = 0; offset < this.#maxWatched; offset += PAGE) {
      const page = await this.#runtime.listRuns({
        state: MOVABLE,
        limit: Math.min(PAGE, this.#maxWatched - offset),
        offset,
      });
      for (const run of page) {
        runs.set(run.id, run);
        open.add(run.id);
      }
      if (page.length < PAGE) break;
    }
    for (const run of await this.#runtime.listRuns({ limit: RECENT })) runs.set(run.id, run);
    for (const id of this.#open) {
      if (runs.has(id)) continue;
      const run = await this.#runtime.backend.getRun(id);
      if (run) runs.set(id, run);
    }
    this.#open = open;
    for (const run of runs.values()) {
      const known = this.#known.get(run.id);
      if (initial) this.#remember(run.id, run.lastTransitionId);
      else if (known !== run.lastTransitionId) await this.#sync(run, known);
    }
  }

  /** Sends the run's transitions after `known` (for a run not known: those since the feed began watching). */
  async #sync(run: RunRecord, known: number | undefined): Promise<void> {
    const transitions = await this.#runtime.backend.listTransitions(run.id);
    let last = known ?? 0;
    for (const t of transitions) {
      if (t.id <= last) continue;
      const fresh = known !== undefined || run.createdAt >= this.#baselineAt || t.at >= this.#baselineAt;
      if (fresh) this.#push(t, run);
      last = t.id;
    }
    this.#remember(run.id, last);
  }

  #push(t: TransitionRecord, run: Pick<RunRecord, "agent" | "workflow">, cursor?: string): void {
    const seq = this.#nextSeq++;
    this.#entries.push(
      cursor === undefined
        ? { seq, data: transitionEventData(t, run) }
        : { seq, cursor, data: transitionEventData(t, run) },
    );
    if (cursor !== undefined) this.#seqOf.set(cursor, seq);
    if (this.#entries.length > this.#capacity) {
      const dropped = this.#entries.splice(0, this.#entries.length - this.#capacity);
      for (const entry of dropped) if (entry.cursor !== undefined) this.#seqOf.delete(entry.cursor);
      this.#startCursor = dropped.at(-1)?.cursor ?? this.#startCursor;
    }
    for (const listener of [...this.#listeners]) listener();
  }

  #remember(runId: string, transitionId: number): void {
    this.#known.delete(runId);
    this.#known.set(runId, transitionId);
    if (this.#known.size > KNOWN_RUNS) {
      const oldest = this.#known.keys().next().value;
      if (oldest !== undefined) this.#known.delete(oldest);
    }
  }
}
