import type { RunEvent, RunEventBody, RunEventsOptions } from "../core/events.ts";
import type { TransitionRecord } from "../core/records.ts";
import { isSettled } from "../core/run-state.ts";

/**
 * The live event stream of runs executed by this process (DESIGN §8): transitions as they are
 * recorded and model output as it streams. Nothing here is journaled: a consumer that needs the
 * record reads the journal; this is for watching a run while it happens.
 */

interface Channel {
  events: RunEvent[];
  /** Offset of `events[0]`; earlier events were dropped to bound memory. */
  first: number;
  next: number;
  settled: boolean;
  listeners: Set<() => void>;
}

/** Events kept per run; older ones are dropped (a consumer asking for them starts at the oldest kept). */
const EVENTS_PER_RUN = 10_000;
/** How far past `EVENTS_PER_RUN` a stream grows before its oldest events are dropped. */
const TRIM = 1_000;
/** Settled runs whose streams are kept for late readers; the oldest is dropped first. */
const SETTLED_RUNS_KEPT = 1_000;

/** Holds each run's recent events in memory and wakes the readers of a run when one is added. */
export class RunEventHub {
  readonly #channels = new Map<string, Channel>();
  readonly #settled: string[] = [];
  readonly #now: () => number;

  constructor(now: () => number) {
    this.#now = now;
  }

  /** Adds an event to the run's stream; `body` becomes the event (pass a fresh object). */
  emit(runId: string, body: RunEventBody): void {
    const channel = this.#channel(runId);
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
   * Adds a recorded transition; `ends` (by default: the state is settled) ends the run's stream
   * for its readers. The runtime passes false for an INTERRUPTED run that recovery takes up again.
   */
  transition(transition: TransitionRecord, ends = isSettled(transition.to)): void {
    const channel = this.#channels.get(transition.runId);
    // Settled, then taken up again (an operator reconciled it): its stream is open again.
    if (channel?.settled && !isSettled(transition.to)) channel.settled = false;
    this.emit(transition.runId, {
      type: "transition",
      from: transition.from,
      to: transition.to,
      pausedReason: transition.pausedReason,
      reason: transition.reason,
      actor: transition.actor,
    });
    if (ends) this.settle(transition.runId);
  }

  /** Marks the run's stream ended (its run settled, maybe in another process). */
  settle(runId: string): void {
    const channel = this.#channel(runId);
    if (channel.settled) return;
    channel.settled = true;
    if (!this.#settled.includes(runId)) this.#settled.push(runId);
    while (this.#settled.length > SETTLED_RUNS_KEPT) this.#channels.delete(this.#settled.shift() as string);
    this.#wake(channel);
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
    const channel = this.#channel(runId);
    let offset = Math.max(options.from ?? 0, 0);
    const signal = options.signal;
    for (;;) {
      for (const event of channel.events.slice(Math.max(0, offset - channel.first))) {
        offset = event.offset + 1;
        yield event;
      }
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
    for (const [runId] of this.#channels) this.settle(runId);
  }

  #channel(runId: string): Channel {
    let channel = this.#channels.get(runId);
    if (!channel) {
      channel = { events: [], first: 0, next: 0, settled: false, listeners: new Set() };
      this.#channels.set(runId, channel);
    }
    return channel;
  }

  #wake(channel: Channel): void {
    if (channel.listeners.size === 0) return;
    for (const listener of [...channel.listeners]) listener();
  }
}
