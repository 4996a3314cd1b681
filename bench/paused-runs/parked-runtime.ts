import { join } from "node:path";
import { Runtime, silentLogger } from "cairn";
import { n } from "./figures.ts";
import { CONCURRENCY, dir } from "./options.ts";
import { agent } from "./parked-agent.ts";
import { TimedSqlite } from "./timed-sqlite.ts";

/** The times of one signalled run, in ms from calling `runtime.signal`. */
export interface Cycle {
  resuming: number;
  returned: number;
  running: number;
  completed: number;
  /** RUNNING was recorded before the next event-loop turn after `runtime.signal` returned. */
  sameTurn: boolean;
}

type Watched = Partial<Cycle> & { done: () => void };

/** A runtime on its own SQLite file, with what the bench watches of it. */
export class ParkedRuntime {
  /** Runs that have paused. */
  paused = 0;
  onPaused: (() => void) | undefined;
  /** The runs being signalled, and when each transition of theirs was recorded. */
  readonly watched = new Map<string, Watched>();

  private constructor(
    readonly path: string,
    readonly backend: TimedSqlite,
    readonly runtime: Runtime,
  ) {}

  /** Opens and starts a runtime on `file` (in the bench's folder); durability undefined: the default, to report what it is. */
  static async open(durability: "process" | "machine" | undefined, file: string): Promise<ParkedRuntime> {
    const path = join(dir, file);
    const backend = new TimedSqlite(durability ? { path, durability } : { path });
    const runtime = new Runtime({
      agents: [agent],
      backend,
      logger: silentLogger,
      worker: { concurrency: CONCURRENCY },
    });
    const parked = new ParkedRuntime(path, backend, runtime);
    runtime.onTransition((t, run) => {
      if (t.to === "PAUSED") {
        parked.paused++;
        parked.onPaused?.();
      }
      const w = parked.watched.get(run.id);
      if (!w) return;
      const now = performance.now();
      if (t.to === "RESUMING") w.resuming ??= now;
      if (t.to === "RUNNING") w.running ??= now;
      if (t.to === "COMPLETED" || t.to === "FAILED") {
        w.completed ??= now;
        w.done();
      }
    });
    await runtime.start();
    return parked;
  }

  /** Starts `count` runs one after the other and resolves once all of them have paused. */
  async park(count: number, offset: number): Promise<void> {
    const target = this.paused + count;
    const all = new Promise<void>((resolve) => {
      this.onPaused = () => {
        if (this.paused >= target) resolve();
      };
    });
    const guard = setInterval(
      () => process.stderr.write(`  ${n(count - (target - this.paused))}/${n(count)} paused\n`),
      10_000,
    );
    for (let i = 0; i < count; i++) await this.runtime.run(agent, "park", { i: offset + i });
    await all;
    clearInterval(guard);
    this.onPaused = undefined;
  }

  /** Signals `ids` one at a time: ms from calling `runtime.signal` to each transition. */
  async signalEach(ids: string[]): Promise<Cycle[]> {
    const out: Cycle[] = [];
    for (const id of ids) {
      let done!: () => void;
      const finished = new Promise<void>((r) => (done = r));
      const w: Watched = { done };
      this.watched.set(id, w);
      const t0 = performance.now();
      await this.runtime.signal(id, "go", { ok: true }, { messageId: `go-${id}` });
      const returned = performance.now() - t0;
      // Was RUNNING recorded in the event-loop turn of the signal, without a timer or poll?
      await new Promise((r) => setImmediate(r));
      const sameTurn = w.running !== undefined;
      await finished;
      this.watched.delete(id);
      out.push({
        resuming: (w.resuming ?? Number.NaN) - t0,
        returned,
        running: (w.running ?? Number.NaN) - t0,
        completed: (w.completed ?? Number.NaN) - t0,
        sameTurn,
      });
    }
    return out;
  }

  /** Parks and signals `count` runs, so the JIT and statement caches are warm; not measured. */
  async warmUp(count: number): Promise<void> {
    await this.park(count, -count);
    const ids = (await this.runtime.listRuns({ state: "PAUSED", limit: count })).map((r) => r.id);
    await this.signalEach(ids);
  }

  /** Signals up to `count` parked runs one at a time, with the backend's calls timed. */
  async latency(count: number): Promise<Cycle[]> {
    const ids = (await this.runtime.listRuns({ state: "PAUSED", workflow: "park", limit: count })).map((r) => r.id);
    this.backend.spent.clear();
    this.backend.timing = true;
    const cycles = await this.signalEach(ids);
    this.backend.timing = false;
    return cycles;
  }
}
