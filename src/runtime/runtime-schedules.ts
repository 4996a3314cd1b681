import type { RuntimeBackend, ScheduleStore } from "../backend/backend.ts";
import type { Clock } from "../core/clock.ts";
import { InvalidDefinitionError, ScheduleNotFoundError } from "../core/errors.ts";
import type { Logger } from "../core/logger.ts";
import type { Actor, Json } from "../core/records.ts";
import type { RunState } from "../core/run-state.ts";
import { definedRecord, pausedRecord } from "../core/schedule-plan.ts";
import { nextTicks } from "../core/schedule-times.ts";
import {
  defineSchedule,
  type ScheduleDefinition,
  type ScheduleOptions,
  type ScheduleRecord,
  timingOfRecord,
} from "../core/schedules.ts";
import { ScheduleTicker } from "./schedule-ticker.ts";

/** A schedule as `runtime.schedules` shows it: its record and its next fire times. */
export interface ScheduleView extends ScheduleRecord {
  /** The next ten fire times (epoch ms), from the next tick on; empty while paused. */
  nextTimes: number[];
}

/** What the schedules of a runtime need from it. */
export interface SchedulesHost {
  backend: RuntimeBackend;
  clock: Clock;
  logger: Logger;
  /** Waits until the backend is open. */
  ready(): Promise<void>;
  hasAgent(agent: string): boolean;
  /** Starts a run of the schedule's workflow (or returns the run the key names). */
  start(
    record: ScheduleRecord,
    options: { key: string; meta: Record<string, Json>; by: Actor },
  ): Promise<{ runId: string; created: boolean }>;
  runState(runId: string): Promise<RunState | undefined>;
  cancel(runId: string, reason: string): Promise<void>;
}

/** Writes of one schedule retried this many times when another process writes it in between. */
const MAX_TRIES = 20;

/**
 * The schedules of a runtime (`runtime.schedules`, DESIGN §4 *Schedules*): define, list, show,
 * pause, resume, trigger and delete them in the backend, and, in a runtime with a worker, fire
 * their ticks ({@link ScheduleTicker}).
 */
export class RuntimeSchedules {
  readonly #host: SchedulesHost;
  readonly #ticker: ScheduleTicker | undefined;

  constructor(host: SchedulesHost, withWorker: boolean) {
    this.#host = host;
    this.#ticker = withWorker
      ? new ScheduleTicker({
          get store() {
            return storeOf(host.backend);
          },
          clock: host.clock,
          logger: host.logger,
          hasAgent: (agent) => host.hasAgent(agent),
          start: (record, options) => host.start(record, options),
          runState: (runId) => host.runState(runId),
          cancel: (runId, reason) => host.cancel(runId, reason),
        })
      : undefined;
  }

  /** Starts firing ticks (a runtime with a worker, whose backend holds schedules). */
  startTicking(): void {
    if (this.#host.backend.schedules) this.#ticker?.start();
  }

  /** Stops firing ticks; waits for a pass in flight. */
  async stopTicking(): Promise<void> {
    await this.#ticker?.stop();
  }

  /**
   * Fires the ticks that are due now (the worker does this by itself; a test that moved a
   * virtual clock calls it so as not to wait for the next look).
   */
  async fireDue(): Promise<void> {
    await this.#host.ready();
    await this.#ticker?.fire();
  }

  /**
   * Creates the schedule, or replaces the definition of the one with its id. Replacing keeps
   * where its ticks stand (and whether it is paused) unless its timing changed, in which case
   * its next tick is the first from now.
   */
  async define(schedule: ScheduleOptions | ScheduleDefinition): Promise<ScheduleView> {
    const definition = "timing" in schedule ? schedule : defineSchedule(schedule);
    return this.#update(definition.id, (existing, now) => definedRecord(definition, existing, now), true);
  }

  /** Every schedule, by id. */
  async list(): Promise<ScheduleView[]> {
    await this.#host.ready();
    return (await this.#store().listSchedules()).map((r) => this.#view(r));
  }

  /** One schedule; `ScheduleNotFoundError` when there is none. */
  async get(id: string): Promise<ScheduleView> {
    await this.#host.ready();
    return this.#view(await this.#existing(id));
  }

  /** Pauses it: no tick fires until `resume`. */
  pause(id: string): Promise<ScheduleView> {
    return this.#update(id, (r, now) => pausedRecord(need(r, id), true, now), false);
  }

  /** Resumes it from the next tick after now: ticks missed while paused do not fire. */
  resume(id: string): Promise<ScheduleView> {
    return this.#update(id, (r, now) => pausedRecord(need(r, id), false, now), false);
  }

  /** Deletes it (its runs stay); `ScheduleNotFoundError` when there is none. */
  async delete(id: string): Promise<void> {
    await this.#host.ready();
    if (!(await this.#store().deleteSchedule(id))) throw notFound(id);
  }

  /**
   * Starts a run of the schedule now, whatever its timing, overlap policy or pause: marks a tick
   * at this moment pending, which a worker that runs the schedule's agent starts (this runtime at
   * once when it is one). Returns the run when it started before this returns, else null (a
   * worker starts it on its next look, within a second).
   */
  async trigger(id: string): Promise<{ runId: string | null; tickAt: number }> {
    let tickAt = 0;
    await this.#update(
      id,
      (r, now) => {
        const record = need(r, id);
        if (record.pendingAt !== null) {
          throw new InvalidDefinitionError(`schedule "${id}" has a tick being started; trigger it again in a moment`);
        }
        tickAt = now;
        return { ...record, pendingAt: now, version: record.version + 1, updatedAt: now };
      },
      false,
    );
    await this.#ticker?.fire();
    const after = await this.#store().getSchedule(id);
    const started = after && after.pendingAt === null && after.lastRunId !== null;
    return { runId: started ? after.lastRunId : null, tickAt };
  }

  async #update(
    id: string,
    change: (existing: ScheduleRecord | undefined, now: number) => ScheduleRecord,
    create: boolean,
  ): Promise<ScheduleView> {
    await this.#host.ready();
    for (let i = 0; i < MAX_TRIES; i++) {
      const existing = await this.#store().getSchedule(id);
      if (!existing && !create) throw notFound(id);
      const next = change(existing, this.#host.clock.now());
      if (await this.#store().writeSchedule(next, existing?.version ?? 0)) {
        this.#ticker && void this.#ticker.fire();
        return this.#view(next);
      }
    }
    throw new InvalidDefinitionError(`schedule "${id}" kept changing under ${MAX_TRIES} writes; try again`);
  }

  async #existing(id: string): Promise<ScheduleRecord> {
    const record = await this.#store().getSchedule(id);
    if (!record) throw notFound(id);
    return record;
  }

  #view(record: ScheduleRecord): ScheduleView {
    const next = record.nextAt;
    const times = record.paused || next === null ? [] : [next, ...nextTicks(timingOfRecord(record), next, 9)];
    return { ...record, nextTimes: times };
  }

  #store(): ScheduleStore {
    return storeOf(this.#host.backend);
  }
}

function storeOf(backend: RuntimeBackend): ScheduleStore {
  const store = backend.schedules;
  if (!store) {
    throw new InvalidDefinitionError(
      `the ${backend.name} backend cannot hold schedules (it has no \`schedules\` role); use the memory, SQLite or PostgreSQL backend`,
    );
  }
  return store;
}

function need(record: ScheduleRecord | undefined, id: string): ScheduleRecord {
  if (!record) throw notFound(id);
  return record;
}

function notFound(id: string): ScheduleNotFoundError {
  return new ScheduleNotFoundError(`no schedule with id "${id}"; list them with \`cairn schedules list\``);
}
