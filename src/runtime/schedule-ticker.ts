import type { ScheduleStore } from "../backend/backend.ts";
import type { Clock } from "../core/clock.ts";
import { CairnError, StorageError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { Actor, Json } from "../core/records.ts";
import { isTerminal, type RunState } from "../core/run-state.ts";
import { completedRecord, type PreviousRun, planTick } from "../core/schedule-plan.ts";
import { tickKey } from "../core/schedule-times.ts";
import type { ScheduleRecord } from "../core/schedules.ts";

/** What the ticker needs from its runtime. */
export interface TickerHost {
  store: ScheduleStore;
  clock: Clock;
  logger: Logger;
  /** Whether this runtime has the agent's code (only then it starts the agent's runs). */
  hasAgent(agent: string): boolean;
  /** Starts a run, or returns the run its key names. */
  start(
    record: ScheduleRecord,
    options: { key: string; meta: Record<string, Json>; by: Actor },
  ): Promise<{ runId: string; created: boolean }>;
  /** The state of a run, undefined when there is none. */
  runState(runId: string): Promise<RunState | undefined>;
  /** Cancels a run (the previous tick's, under `cancelPrevious`). */
  cancel(runId: string, reason: string): Promise<void>;
}

/** How often a ticker looks for schedules defined or changed elsewhere (it also arms a timer on the next tick). */
export const SCHEDULE_POLL_MS = 1000;
/** Ticks one schedule may handle in one pass (catch-up of many missed ticks goes on in the next). */
const MAX_STEPS = 200;

/** The actor that starts a schedule's runs. */
export function scheduleActor(id: string): Actor {
  return { kind: "system", id: `schedule:${id}` };
}

/**
 * Fires the due ticks of the schedules whose agents this runtime has (DESIGN §4 *Schedules*).
 * Every live worker runs one; a tick starts exactly one run whichever of them fire it: each plan
 * is written by compare-and-set on the schedule's version (one worker wins the tick), and the
 * run is created under a key made of the schedule id and the tick time, so a worker that
 * completes a tick another one claimed (and died) finds the run rather than making a second.
 */
export class ScheduleTicker {
  readonly #host: TickerHost;
  #poller: ReturnType<typeof setInterval> | undefined;
  #cancelTimer: (() => void) | undefined;
  #pass: Promise<void> | undefined;
  #again = false;
  #stopped = true;

  constructor(host: TickerHost) {
    this.#host = host;
  }

  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#poller = setInterval(() => void this.fire(), SCHEDULE_POLL_MS);
    this.#poller.unref?.();
    void this.fire();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#poller);
    this.#cancelTimer?.();
    await this.#pass?.catch(() => {});
  }

  /** One pass over the due schedules (a pass asked for while one runs follows it). Never throws. */
  fire(): Promise<void> {
    if (this.#pass) {
      this.#again = true;
      return this.#pass;
    }
    this.#pass = (async () => {
      do {
        this.#again = false;
        await this.#passOnce().catch((error: unknown) =>
          this.#host.logger.warn({ error: String(error) }, "firing schedules failed"),
        );
      } while (this.#again && !this.#stopped);
    })().finally(() => {
      this.#pass = undefined;
    });
    return this.#pass;
  }

  async #passOnce(): Promise<void> {
    const { store, clock } = this.#host;
    for (const record of await store.dueSchedules(clock.now(), 100)) {
      if (this.#stopped) return;
      if (this.#host.hasAgent(record.agent)) await this.#handle(record);
    }
    if (!this.#stopped) await this.#arm();
  }

  /** Arms a timer on the earliest next tick of this runtime's schedules. */
  async #arm(): Promise<void> {
    const next = (await this.#host.store.listSchedules())
      .filter((r) => !r.paused && r.nextAt !== null && this.#host.hasAgent(r.agent))
      .reduce<number | undefined>(
        (min, r) => (min === undefined || (r.nextAt as number) < min ? (r.nextAt as number) : min),
        undefined,
      );
    this.#cancelTimer?.();
    this.#cancelTimer = next === undefined ? undefined : this.#host.clock.schedule(next, () => void this.fire());
  }

  /** Handles a schedule until it has nothing due: completes a pending tick, plans and writes the next. */
  async #handle(first: ScheduleRecord): Promise<void> {
    let record: ScheduleRecord | undefined = first;
    for (let step = 0; record && step < MAX_STEPS && !this.#stopped; step++) {
      if (record.pendingAt !== null) {
        record = await this.#complete(record);
        continue;
      }
      const plan = planTick(record, this.#host.clock.now(), await this.#previous(record));
      if (!plan) return;
      if (await this.#host.store.writeSchedule(plan.next, record.version)) {
        this.#host.logger.info(`schedule ${record.id}: tick ${iso(plan.next.lastTickAt)} ${plan.note}`);
        record = plan.next;
      } else {
        record = await this.#host.store.getSchedule(record.id); // another worker moved it: look again
      }
    }
  }

  async #previous(record: ScheduleRecord): Promise<PreviousRun> {
    if (record.lastRunId === null) return "none";
    const state = await this.#host.runState(record.lastRunId);
    return state === undefined || isTerminal(state) ? "ended" : "active";
  }

  /** Starts the run of the pending tick (or finds it), then records it; the record as it is after. */
  async #complete(record: ScheduleRecord): Promise<ScheduleRecord | undefined> {
    const tick = record.pendingAt as number;
    try {
      if (record.overlap === "cancelPrevious" && (await this.#previous(record)) === "active") {
        await this.#host.cancel(
          record.lastRunId as string,
          `schedule ${record.id}: the tick of ${iso(tick)} replaces it`,
        );
      }
      const { runId } = await this.#host.start(record, {
        key: tickKey(record.id, tick),
        meta: { schedule: record.id, scheduledFor: iso(tick) },
        by: scheduleActor(record.id),
      });
      const done = completedRecord(record, runId, this.#host.clock.now());
      if (await this.#host.store.writeSchedule(done, record.version)) return done;
    } catch (error) {
      if (error instanceof StorageError || !(error instanceof CairnError)) throw error;
      // The run cannot be started (its input no longer fits, the workflow is gone): the tick is
      // dropped with the reason logged, not tried again forever.
      this.#host.logger.error(`schedule ${record.id}: the run of tick ${iso(tick)} cannot start: ${error.message}`);
      await this.#host.store.writeSchedule({ ...record, pendingAt: null, version: record.version + 1 }, record.version);
    }
    return this.#host.store.getSchedule(record.id);
  }
}

function iso(at: number | null): string {
  return at === null ? "-" : new Date(at).toISOString();
}
