import { SqliteBackend } from "cairn/sqlite";

/** The SQLite backend with the time spent in each call recorded while `timing` is on. */
export class TimedSqlite extends SqliteBackend {
  timing = false;
  readonly spent = new Map<string, { n: number; ms: number }>();
  record(label: string, ms: number): void {
    const entry = this.spent.get(label) ?? { n: 0, ms: 0 };
    entry.n++;
    entry.ms += ms;
    this.spent.set(label, entry);
  }
  static {
    for (const name of [
      "createRun",
      "getRun",
      "deliverSignal",
      "claimRun",
      "transition",
      "listTransitions",
      "loadSteps",
      "loadWaits",
      "saveSteps",
      "suspend",
      "listExpiredLeases",
      "listRecoverable",
      "fireDueWaits",
      "nextDueAt",
    ] as const) {
      const original = SqliteBackend.prototype[name] as (...args: unknown[]) => Promise<unknown>;
      Object.defineProperty(TimedSqlite.prototype, name, {
        value: function (this: TimedSqlite, ...args: unknown[]) {
          if (!this.timing) return original.apply(this, args);
          // The work of these methods is synchronous (better-sqlite3): timed up to the promise.
          const t0 = performance.now();
          const result = original.apply(this, args);
          const spent = performance.now() - t0;
          if (name === "claimRun") {
            void result.then(
              (run) => this.record(run ? "claimRun (a run)" : "claimRun (none)", spent),
              () => this.record("claimRun (error)", spent),
            );
          } else if (name === "saveSteps") {
            this.record((args[1] as { sync: boolean }).sync ? "saveSteps (sync)" : "saveSteps (no sync)", spent);
          } else if (name === "transition") {
            this.record(`transition → ${(args[0] as { to: string }).to}`, spent);
          } else {
            this.record(name, spent);
          }
          return result;
        },
      });
    }
  }
}
