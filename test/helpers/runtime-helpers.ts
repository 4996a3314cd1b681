import type { AgentLike } from "../../src/agent/decorators.ts";
import type { RuntimeBackend } from "../../src/backend/backend.ts";
import { InMemoryBackend } from "../../src/backend/memory/memory-backend.ts";
import { silentLogger } from "../../src/core/logger.ts";
import type { RunRecord } from "../../src/core/records.ts";
import { Runtime, type RuntimeOptions } from "../../src/runtime/runtime.ts";

/** A promise with its resolve exposed. */
export interface Deferred<T = void> {
  promise: Promise<T>;
  resolve(value: T): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Never settles: a tool awaiting it is in flight until the run is stopped. */
export const forever = new Promise<never>(() => {});

/** Runtimes made by {@link Runtimes.make}, shut down together after each test. */
export class Runtimes {
  readonly #all: Runtime[] = [];

  make(options: Omit<RuntimeOptions, "agents"> & { agents: readonly AgentLike[] }): Runtime {
    const runtime = new Runtime({ logger: silentLogger, ...options });
    this.#all.push(runtime);
    return runtime;
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.#all.splice(0).map((r) => r.shutdown({ graceMs: 0 })));
  }
}

/** Polls until `check` returns a value other than undefined/false (at most `timeoutMs`). */
export async function until<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  { timeoutMs = 5000, what = "condition" }: { timeoutMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Waits until the run is in `state`. */
export function untilState(backend: RuntimeBackend, runId: string, state: RunRecord["state"]): Promise<RunRecord> {
  return until(
    async () => {
      const run = await backend.getRun(runId);
      return run?.state === state ? run : undefined;
    },
    { what: `run ${runId} to be ${state}` },
  );
}

export { InMemoryBackend };
