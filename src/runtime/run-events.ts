import type { RunEvent, RunEventBody, RunEventsOptions } from "../core/events.ts";
import type { TransitionRecord } from "../core/records.ts";
import { isSettled, OWNED_STATES } from "../core/run-state.ts";

/**
 * The live event stream of runs executed by this process (DESIGN §4, streaming): transitions as
 * they are recorded and model output as it streams. Nothing here is journaled: a consumer that
 * needs the record reads the journal; this is for watching a run while it happens.
 *
 * A run's stream costs nothing while nobody can see it: it is kept while this process executes the
 * run (from a transition into an owned state, RUNNING and the like, to the transition that lets it
 * go) or while a reader follows it, and dropped when neither holds — a paused run, or a run a
 * client-only runtime started, holds no memory here. The streams of the last runs that settled are
 * kept for late readers, a bounded number of them.
 */

interface Channel {
  events: RunEvent[];
  /** Offset of `events[0]`; earlier events were dropped to bound memory. */
  first: number;
  next: number;
  settled: boolean;
  /** Woken when an event is added or the stream ends. */
  listeners: Set<() => void>;
  /** Readers following the stream now (`read`). */
  readers: number;
}

/** Events kept per run; older ones are dropped (a consumer asking for them starts at the oldest kept). */
const EVENTS_PER_RUN = 10_000;
/** How far past `EVENTS_PER_RUN` a stream grows before its oldest events are dropped. */
const TRIM = 1_000;
/** Settled runs whose streams are kept for late readers; the oldest is dropped first. */
const SETTLED_RUNS_KEPT = 1_000;

/** Holds the streams of the runs this process executes or someone follows, and wakes their readers. */
export class RunEventHub {
  readonly #channels = new Map<string, Channel>();
  /** Runs this process executes now: their streams are kept whether or not anyone reads them. */
  readonly #executing = new Set<string>();
  /** Settled runs whose streams are kept without a reader, oldest first (a Set keeps insertion order). */
  readonly #settled = new Set<string>();
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Streams held now (for tests of what a run costs): executing, followed, or recently settled. */
  get size(): number {
    return this.#channels.size;
  }

  /**
   * Adds an event to the run's stream; `body` becomes the event (pass a fresh object). A run that
   * is neither executed here nor followed has no stream: the event is dropped.
   */
  emit(runId: string, body: RunEventBody): void {
    const channel = this.#channels.get(runId) ?? (this.#executing.has(runId) ? this.#open(runId) : undefined);
    if (!channel) return;
    // The body is the event (made for this call by its emitter): stamped, not copied.
    const event = body as RunEvent;
    event.runId = runId;
    event.offset = channel.next++;
    event.at = this.#now();
    channel.events.push(event);
    // Trimmed a thousand at a time, not one by one: dropping from the front of an array moves the rest.
    if (channel.events.length >= EVENTS_PER_RUN + TRIM) {
      channel.events.splice(0, channel.events.length - EVENTS_PER_RUN);
      channel.first = channel.next - channel.events.length;
    }
    this.#wake(channel);
  }

  /**
   * Adds a transition this process recorded; `ends` (by default: the state is settled) ends the
   * run's stream for its readers. The runtime passes false for an INTERRUPTED run that recovery
   * takes up again. A transition into an owned state (RUNNING, RESUMING, …) means this process
   * executes the run until its next transition says otherwise.
   */
  transition(transition: TransitionRecord, ends = isSettled(transition.to)): void {
    const runId = transition.runId;
    if (OWNED_STATES.has(transition.to)) this.#executing.add(runId);
    else this.#executing.delete(runId);
    const channel = this.#channels.get(runId);
    // Settled, then taken up again (an operator reconciled it): its stream is open again.
    if (channel?.settled && !isSettled(transition.to)) {
      channel.settled = false;
      this.#settled.delete(runId);
    }
    this.emit(runId, {
      type: "transition",
      from: transition.from,
      to: transition.to,
      pausedReason: transition.pausedReason,
      reason: transition.reason,
      actor: transition.actor,
    });
    if (ends) this.settle(runId);
    else this.#release(runId);
  }

  /** Marks the run's stream ended (its run settled, maybe in another process). */
  settle(runId: string): void {
    this.#executing.delete(runId);
    const channel = this.#channels.get(runId);
    if (!channel || channel.settled) return;
    channel.settled = true;
    this.#wake(channel);
    this.#release(runId);
  }

  /**
   * The run's events from `from` on, then each new one as it comes, until the run settles or
   * `signal` fires. A run driven by another process has no transitions here: every `checkMs`
   * without news, `settledElsewhere()` is asked whether it settled, which ends the iteration too.
   */
  async *read(
    runId: string,
    options: RunEventsOptions & { checkMs: number },
    settledElsewhere: () => Promise<boolean>,
  ): AsyncGenerator<RunEvent> {
    const channel = this.#channels.get(runId) ?? this.#open(runId);
    channel.readers++;
    this.#settled.delete(runId);
    try {
      yield* this.#follow(channel, runId, options, settledElsewhere);
    } finally {
      channel.readers--;
      this.#release(runId);
    }
  }

  async *#follow(
    channel: Channel,
    runId: string,
    options: RunEventsOptions & { checkMs: number },
    settledElsewhere: () => Promise<boolean>,
  ): AsyncGenerator<RunEvent> {
    let offset = Math.max(options.from ?? 0, 0);
    const signal = options.signal;
    for (;;) {
      for (const event of channel.events.slice(Math.max(0, offset - channel.first))) {
        offset = event.offset + 1;
        yield event;
      }
      // Events added while the reader held the ones before (a yield waits for it): read them too
      // before an ending, which may have come with them, ends the stream.
      if (offset < channel.next && !signal?.aborted) continue;
      if (channel.settled || signal?.aborted) return;
      const woken = await new Promise<boolean>((resolve) => {
        const done = (news: boolean) => {
          clearTimeout(timer);
          channel.listeners.delete(wake);
          signal?.removeEventListener("abort", wake);
          resolve(news);
        };
        const wake = () => done(true);
        const timer = setTimeout(() => done(false), options.checkMs);
        channel.listeners.add(wake);
        signal?.addEventListener("abort", wake, { once: true });
      });
      if (!woken && channel.next === offset && (await settledElsewhere().catch(() => false))) this.settle(runId);
    }
  }

  /** Wakes every reader (the runtime is closing): each yields what is buffered and ends. */
  closeAll(): void {
    this.#executing.clear();
    for (const runId of [...this.#channels.keys()]) this.settle(runId);
  }

  #open(runId: string): Channel {
    const channel: Channel = { events: [], first: 0, next: 0, settled: false, listeners: new Set(), readers: 0 };
    this.#channels.set(runId, channel);
    return channel;
  }

  /**
   * Drops the run's stream once nothing holds it (not executed here, no reader): a settled run's
   * is kept among the last `SETTLED_RUNS_KEPT` for late readers, any other's is dropped now.
   */
  #release(runId: string): void {
    const channel = this.#channels.get(runId);
    if (!channel || channel.readers > 0 || this.#executing.has(runId)) return;
    if (!channel.settled) {
      this.#channels.delete(runId);
      return;
    }
    this.#settled.delete(runId);
    this.#settled.add(runId);
    for (const oldest of this.#settled) {
      if (this.#settled.size <= SETTLED_RUNS_KEPT) break;
      this.#settled.delete(oldest);
      const kept = this.#channels.get(oldest);
      if (kept && kept.readers === 0 && !this.#executing.has(oldest)) this.#channels.delete(oldest);
    }
  }

  #wake(channel: Channel): void {
    if (channel.listeners.size === 0) return;
    for (const listener of [...channel.listeners]) listener();
  }
}
