import { execFile } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { InvalidDefinitionError, LeaseLostError, StorageError } from "../../core/errors.ts";
import type { RunRecord, StepRecord } from "../../core/records.ts";
import { runBackendConformance } from "../conformance/backend-conformance.ts";
import {
  fullStep,
  LEASE_MS,
  move,
  runInput,
  runningRun,
  signalTo,
  startedStep,
  stopOf,
  suspendRequest,
  T0,
  waitRecord,
} from "../conformance/conformance-fixtures.ts";
import { largeJson } from "../conformance/journal-conformance.ts";
import { SqliteBackend, type SqliteBackendOptions } from "./sqlite-backend.ts";

const tmpRoot = join(tmpdir(), "cairn-sqlite-tests");

function tempPath(): string {
  return join(tmpRoot, randomUUID(), "cairn.db");
}

/** Removes the per-test directory under `tmpRoot` that holds `path` (and its -wal, -shm files). */
function removeDatabase(path: string): void {
  const top = relative(tmpRoot, path).split(sep)[0];
  if (top && top !== "..") rmSync(join(tmpRoot, top), { recursive: true, force: true });
}

runBackendConformance("sqlite (file)", () => new SqliteBackend({ path: tempPath() }), {
  cleanup: async (backend) => removeDatabase(backend.path),
  transitionFeed: true,
  schedules: true,
  wakeUps: true,
});
runBackendConformance(
  "sqlite (file, process durability)",
  () => new SqliteBackend({ path: tempPath(), durability: "process" }),
  {
    cleanup: async (backend) => removeDatabase(backend.path),
    transitionFeed: true,
    schedules: true,
    wakeUps: true,
  },
);
runBackendConformance("sqlite (:memory:)", () => new SqliteBackend({ path: ":memory:" }), {
  transitionFeed: true,
  schedules: true,
  wakeUps: true,
});

describe("SqliteBackend", () => {
  const opened: SqliteBackend[] = [];
  const paths: string[] = [];

  async function open(options: Partial<SqliteBackendOptions> = {}): Promise<SqliteBackend> {
    const path = options.path ?? tempPath();
    if (!paths.includes(path)) paths.push(path);
    const backend = new SqliteBackend({ ...options, path });
    await backend.init();
    opened.push(backend);
    return backend;
  }

  afterEach(async () => {
    for (const backend of opened.splice(0)) await backend.close();
    for (const path of paths.splice(0)) removeDatabase(path);
  });

  it("keeps runs, transitions and steps across close and reopen", async () => {
    const first = await open();
    const { run } = await first.createRun(runInput({ key: "k" }));
    const claimed = (await first.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    await first.transition(move(claimed, "PENDING", "RUNNING"));
    await first.saveSteps([fullStep(run.id, 1, claimed.epoch)], { epoch: claimed.epoch, sync: true });
    await first.saveSteps([startedStep(run.id, 2, claimed.epoch)], { epoch: claimed.epoch, sync: false });
    const before = {
      run: await first.getRun(run.id),
      transitions: await first.listTransitions(run.id),
      steps: await first.loadSteps(run.id),
    };
    await first.close();

    const second = await open({ path: first.path });
    expect({
      run: await second.getRun(run.id),
      transitions: await second.listTransitions(run.id),
      steps: await second.loadSteps(run.id),
    }).toStrictEqual(before);
    expect(before.steps).toHaveLength(2);
    expect(before.run?.state).toBe("RUNNING");
    expect((await second.createRun(runInput({ key: "k" }))).created).toBe(false);
  });

  it("shares one file between two instances as between two processes", async () => {
    const a = await open();
    const b = await open({ path: a.path });
    const { run } = await a.createRun(runInput({ key: "shared" }));
    expect(await b.getRun(run.id)).toStrictEqual(run);
    const again = await b.createRun(runInput({ key: "shared" }));
    expect(again).toMatchObject({ created: false, run: { id: run.id } });

    const [byA, byB] = await Promise.all([
      a.claimRun({ workerId: "wa", now: T0, leaseMs: LEASE_MS }),
      b.claimRun({ workerId: "wb", now: T0, leaseMs: LEASE_MS }),
    ]);
    expect(byA?.id).toBe(run.id);
    expect(byB).toBeUndefined();
    expect(await b.claimRun({ workerId: "wb", now: T0 + 1, leaseMs: LEASE_MS, runId: run.id })).toBeUndefined();
    expect(await b.getRun(run.id)).toMatchObject({ leaseOwner: "wa", epoch: 1 });

    // b takes the run after a's lease lapsed; a's writes are fenced off from then on.
    const byBLater = (await b.claimRun({ workerId: "wb", now: T0 + LEASE_MS, leaseMs: LEASE_MS })) as RunRecord;
    expect(byBLater.epoch).toBe(2);
    await expect(a.saveSteps([fullStep(run.id, 1, 1)], { epoch: 1, sync: true })).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    await expect(a.transition(move(byA as RunRecord, "PENDING", "RUNNING"))).rejects.toBeInstanceOf(LeaseLostError);
    await b.transition(move(byBLater, "PENDING", "RUNNING"));
    expect((await a.getRun(run.id))?.state).toBe("RUNNING");
    expect(await a.listTransitions(run.id)).toHaveLength(2);
  });

  it("hands each run to exactly one of several instances claiming concurrently", async () => {
    const instances = [await open()];
    for (let i = 0; i < 3; i++) instances.push(await open({ path: instances[0]?.path ?? "" }));
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await instances[i % 4]?.createRun(runInput({ at: T0 + i })))?.run.id ?? "");
    const claims = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        instances[i % 4]?.claimRun({ workerId: `w${i % 4}`, now: T0 + 100, leaseMs: LEASE_MS }),
      ),
    );
    const got = claims.filter((r) => r !== undefined).map((r) => r.id);
    expect(got).toHaveLength(20);
    expect(new Set(got)).toEqual(ids);
  });

  it("hands each run to exactly one of several processes claiming concurrently", async () => {
    const backend = await open();
    const ids = new Set<string>();
    for (let i = 0; i < 150; i++) ids.add((await backend.createRun(runInput({ at: T0 + i }))).run.id);
    // The children start claiming together once all three are ready (a file each), so their
    // claims overlap however long each took to start on a loaded machine.
    const script = join(backend.path, "..", "claimer.mjs");
    writeFileSync(
      script,
      `import { SqliteBackend } from ${JSON.stringify(new URL("./sqlite-backend.ts", import.meta.url).href)};
import { existsSync, writeFileSync } from "node:fs";
const [path, workerId] = process.argv.slice(2);
const backend = new SqliteBackend({ path });
await backend.init();
writeFileSync(path + ".ready." + workerId, "");
while (!["p1", "p2", "p3"].every((w) => existsSync(path + ".ready." + w))) await new Promise((r) => setTimeout(r, 1));
const got = [];
for (;;) {
  const run = await backend.claimRun({ workerId, now: ${T0 + 1_000}, leaseMs: ${LEASE_MS} });
  if (!run) break;
  if (run.leaseOwner !== workerId || run.epoch !== 1) throw new Error("bad claim " + JSON.stringify(run));
  got.push(run.id);
  // A worker does other work between claims; without a pause the busy handler's backoff lets
  // one process take every run and nothing would overlap.
  await new Promise((r) => setTimeout(r, 1));
}
await backend.close();
process.stdout.write(JSON.stringify(got));
`,
    );
    const children = ["p1", "p2", "p3"].map(
      (workerId) =>
        new Promise<string[]>((done, fail) => {
          execFile(
            process.execPath,
            ["--import", "tsx", script, backend.path, workerId],
            { cwd: process.cwd() },
            (error, stdout, stderr) => (error ? fail(new Error(`${workerId}: ${stderr}`)) : done(JSON.parse(stdout))),
          );
        }),
    );
    const results = await Promise.all(children);
    const all = results.flat();
    expect(results.filter((got) => got.length > 0).length).toBeGreaterThanOrEqual(2);
    expect(all).toHaveLength(150);
    expect(new Set(all)).toEqual(ids);
    const stored = await backend.listRuns({ limit: 200 });
    for (const [i, got] of results.entries()) {
      for (const id of got) expect(stored.find((r) => r.id === id)?.leaseOwner).toBe(`p${i + 1}`);
    }
  });

  it("fsyncs every durable write in machine mode and switches to NORMAL for sync: false steps and claims", async () => {
    const backend = await open();
    expect(backend.durability).toBe("machine");
    expect(backend.synchronous).toBe("FULL");
    const { run } = await backend.createRun(runInput());
    // A claim rides on the synchronous transition a worker always makes next.
    const claimed = (await backend.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    expect(backend.synchronous).toBe("NORMAL");
    await backend.saveSteps([startedStep(run.id, 1, claimed.epoch)], { epoch: claimed.epoch, sync: false });
    expect(backend.synchronous).toBe("NORMAL");
    await backend.saveSteps([fullStep(run.id, 1, claimed.epoch)], { epoch: claimed.epoch, sync: true });
    expect(backend.synchronous).toBe("FULL");
    await backend.saveSteps([startedStep(run.id, 2, claimed.epoch)], { epoch: claimed.epoch, sync: false });
    await backend.transition(move(claimed, "PENDING", "RUNNING"));
    expect(backend.synchronous).toBe("FULL");
  });

  it("fsyncs every write of waits, signals and stops in machine mode", async () => {
    const backend = await open();
    const run = await runningRun(backend);
    const relax = () =>
      backend.saveSteps([startedStep(run.id, 9, run.epoch)], { epoch: run.epoch, sync: false }).then(() => {
        expect(backend.synchronous).toBe("NORMAL");
      });
    const writes: Array<() => Promise<unknown>> = [
      () => backend.suspend(suspendRequest(run, [waitRecord(run.id, 1, { dueAt: T0 + 500 })])),
      () => backend.deliverSignal(signalTo(run.id, "other", "m1")),
      () => backend.fireDueWaits(T0 + 1_000, 10),
      () => backend.requestStop(stopOf(run.id, "cancel")),
    ];
    for (const write of writes) {
      await relax();
      await write();
      expect(backend.synchronous).toBe("FULL");
    }
  });

  it("keeps a run's signals in arrival order, whatever their times, through consumption and reopening", async () => {
    const first = await open();
    const run = await runningRun(first);
    for (const [i, at] of [T0 + 300, T0 + 100, T0 + 200].entries()) {
      await first.deliverSignal(signalTo(run.id, i === 1 ? "approved" : "other", `m${i}`, { at }));
    }
    // The second signal is consumed (an upsert of its row) by the wait that takes it.
    const result = await first.suspend(suspendRequest(run, [waitRecord(run.id, 1)]));
    expect(result).toMatchObject({ paused: false, resolved: [{ id: "w1", resolution: { messageId: "m1" } }] });
    const order = (await first.listSignals(run.id)).map((s) => [s.messageId, s.consumedBy]);
    expect(order).toStrictEqual([
      ["m0", null],
      ["m1", "w1"],
      ["m2", null],
    ]);
    await first.close();
    const second = await open({ path: first.path });
    expect((await second.listSignals(run.id)).map((s) => [s.messageId, s.consumedBy])).toStrictEqual(order);
  });

  it("never fsyncs on commit in process mode", async () => {
    const backend = await open({ durability: "process" });
    expect(backend.synchronous).toBe("NORMAL");
    const { run } = await backend.createRun(runInput());
    const claimed = (await backend.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    await backend.saveSteps([fullStep(run.id, 1, claimed.epoch)], { epoch: claimed.epoch, sync: true });
    expect(backend.synchronous).toBe("NORMAL");
  });

  describe("out-of-line payloads", () => {
    const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
    const reference = (text: string) => `{"$cairnBlob":"sha256:${sha256(text)}","bytes":${Buffer.byteLength(text)}}`;

    /** The step columns and blobs as the file holds them. */
    function stored(path: string): {
      steps: { seq: number; args: string | null; result: string | null }[];
      blobs: { digest: string; text: string; bytes: number }[];
    } {
      const raw = new Database(path, { readonly: true });
      try {
        return {
          steps: raw.prepare("SELECT seq, args, result FROM steps ORDER BY run_id, seq").all() as never,
          blobs: raw.prepare("SELECT digest, text, bytes FROM blobs ORDER BY digest").all() as never,
        };
      } finally {
        raw.close();
      }
    }

    it("stores a large result once in blobs, each step row holding a reference, and loads the value", async () => {
      const backend = await open();
      const run = await runningRun(backend);
      const result = largeJson("result", 1_000_000);
      const text = JSON.stringify(result);
      const first: StepRecord = { ...fullStep(run.id, 1, run.epoch), result };
      const second: StepRecord = { ...fullStep(run.id, 2, run.epoch), result };
      await backend.saveSteps([first], { epoch: run.epoch, sync: true });
      await backend.saveSteps([second], { epoch: run.epoch, sync: true });
      await backend.saveSteps([first], { epoch: run.epoch, sync: true });
      const { steps, blobs } = stored(backend.path);
      expect(steps).toEqual([
        { seq: 1, args: JSON.stringify(first.args), result: reference(text) },
        { seq: 2, args: JSON.stringify(second.args), result: reference(text) },
      ]);
      expect(blobs).toEqual([{ digest: sha256(text), text, bytes: Buffer.byteLength(text) }]);
      expect(await backend.loadSteps(run.id)).toStrictEqual([first, second]);
      await backend.close();
      const reopened = await open({ path: backend.path });
      expect(await reopened.loadSteps(run.id)).toStrictEqual([first, second]);
    });

    it("keeps JSON text of exactly the inline limit in the row and stores one byte more out of line", async () => {
      // The limit counts UTF-8 bytes: "é" takes two.
      const atLimit = "é".repeat(499); // 2 + 998 bytes of JSON text
      const over = `${atLimit}a`;
      const small = await open({ inlineLimitBytes: 1000 });
      const run = await runningRun(small);
      const step: StepRecord = { ...fullStep(run.id, 1, run.epoch), args: atLimit, result: over };
      await small.saveSteps([step], { epoch: run.epoch, sync: true });
      expect(stored(small.path).steps).toEqual([
        { seq: 1, args: JSON.stringify(atLimit), result: reference(JSON.stringify(over)) },
      ]);
      expect(await small.loadSteps(run.id)).toStrictEqual([step]);

      // The default limit: 256 KiB.
      const backend = await open();
      const other = await runningRun(backend);
      const under = "x".repeat(256 * 1024 - 2);
      const above = "y".repeat(256 * 1024 - 1);
      const big: StepRecord = { ...fullStep(other.id, 1, other.epoch), args: under, result: above };
      await backend.saveSteps([big], { epoch: other.epoch, sync: true });
      const { steps, blobs } = stored(backend.path);
      expect(steps[0]?.args).toBe(JSON.stringify(under));
      expect(steps[0]?.result).toBe(reference(JSON.stringify(above)));
      expect(blobs.map((b) => b.bytes)).toEqual([256 * 1024 + 1]);
      expect(await backend.loadSteps(other.id)).toStrictEqual([big]);
    });

    it("writes no blob when the fence refuses the step that refers to it", async () => {
      const backend = await open();
      const run = await runningRun(backend);
      const large = { ...fullStep(run.id, 1, run.epoch), result: largeJson("refused", 300_000) };
      for (const steps of [[large], [startedStep(run.id, 2, run.epoch), large]]) {
        const error = await backend.saveSteps(steps, { epoch: run.epoch + 1, sync: true }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(LeaseLostError);
      }
      expect(stored(backend.path)).toEqual({ steps: [], blobs: [] });
    });

    it("refuses an inlineLimitBytes that is not a whole number of bytes", () => {
      for (const inlineLimitBytes of [-1, 1.5, Number.NaN]) {
        expect(() => new SqliteBackend({ path: ":memory:", inlineLimitBytes })).toThrow(InvalidDefinitionError);
      }
    });
  });

  it("creates the parent directory when it is missing", async () => {
    const path = join(tmpRoot, randomUUID(), "deeper", "still", "cairn.db");
    const backend = await open({ path });
    expect((await backend.createRun(runInput())).created).toBe(true);
  });

  it("wraps an unusable path in a StorageError that names it", async () => {
    const dir = join(tmpRoot, randomUUID());
    const blocker = join(dir, "not-a-dir");
    await open({ path: join(dir, "ok.db") });
    writeFileSync(blocker, "");
    const path = join(blocker, "cairn.db");
    const error = await new SqliteBackend({ path }).init().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect((error as StorageError).code).toBe("STORAGE");
    expect((error as Error).message).toContain(path);
    expect((error as Error).message).toMatch(/not a directory|choose another path/);
  });

  it("turns a lock held past the busy timeout into a StorageError with the fix", async () => {
    const backend = await open({ busyTimeoutMs: 50 });
    const holder = new Database(backend.path);
    holder.exec("BEGIN IMMEDIATE");
    try {
      const error = await backend.createRun(runInput()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageError);
      expect((error as Error).message).toContain(backend.path);
      expect((error as Error).message).toMatch(/SQLITE_BUSY.*busyTimeoutMs/);
      expect((error as StorageError).retryable).toBe(true);
    } finally {
      holder.exec("ROLLBACK");
      holder.close();
    }
    expect((await backend.createRun(runInput())).created).toBe(true);
  });

  it("refuses calls before init and after close", async () => {
    const backend = new SqliteBackend({ path: ":memory:" });
    await expect(backend.getRun("x")).rejects.toThrow(/call init\(\) first/);
    await backend.init();
    await backend.init();
    expect(await backend.getRun("x")).toBeUndefined();
    await backend.close();
    await backend.close();
    await expect(backend.listRuns()).rejects.toBeInstanceOf(StorageError);
  });
});
