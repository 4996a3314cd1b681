import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import type { RunRecord, Runtime, TransitionRecord } from "../src/index.ts";
import { PostgresBackend } from "../src/postgres.ts";
import { FENCING_TOOLS } from "./fencing/fencing-agent.ts";
import {
  ended,
  executions,
  leaseLapsed,
  records,
  rowUnlocked,
  type StartedLine,
  sleep,
  startChild,
  startWorkerB,
  stopped,
  TAKEN_OVER,
  transitionLog,
  until,
  type Write,
} from "./fencing/fencing-harness.ts";
import { startTestDatabase, type TestDatabase } from "./helpers/postgres.ts";

/**
 * A worker frozen inside a transaction (PostgreSQL; DESIGN §4, leases and fencing). Worker A, a
 * child process with a 600 ms lease, stops itself with SIGSTOP inside the transaction that ends
 * its run, right after that transaction locked the run's row. Its lease lapses, but the lock
 * stays (the run is a child run, whose end goes through the planners' transaction; a plain end is
 * one statement, which holds no lock between round trips): worker B, a runtime in this process, cannot take the run over while A's transaction is
 * open, and A, frozen, never closes it. The backend's `transactionIdleTimeoutMs` bounds this: the
 * server ends a session idle inside a transaction for longer, rolling the transaction back.
 *
 * - With a 2 s bound, B must take the run over no sooner than 2 s after A froze (it was blocked
 *   until then) and finish it; A, woken with SIGCONT, must fail to end the run and write nothing.
 * - With the bound off (0), nothing may move while A is frozen, long after its lease lapsed:
 *   what the bound is for. Killing A (its connection closes) then lets B finish.
 */

const root = mkdtempSync(join(tmpdir(), "cairn-frozen-tx-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const IDLE_MS = 2000;

describe("a worker frozen inside a transaction (PostgreSQL)", () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await startTestDatabase();
  });
  afterAll(async () => {
    await db?.close();
  });

  it.each([
    [IDLE_MS, "the server ends A's transaction and B takes the run over"],
    [0, "no bound: the run stays locked under A while A is frozen"],
  ])("transactionIdleTimeoutMs %i: %s", async (idleMs: number, _what: string) => {
    const dir = mkdtempSync(join(root, `idle-${idleMs}-`));
    const execFile = join(dir, "executions");
    const schema = db.schema("frozen_tx");
    const inspector = new PostgresBackend({ connectionString: db.url, schema });
    await inspector.init();
    const bLog: string[] = [];
    let b: Runtime | undefined;
    const a = startChild(["postgres", db.url, schema, execFile, "transaction", String(idleMs)]);
    onTestFailed(() => {
      console.error(`worker A said:\n${a.lines().join("\n")}\n${a.err()}`);
      console.error(`worker B said:\n${bLog.join("\n")}`);
    });
    try {
      const {
        runId,
        workerId: aWorker,
        pid: aPid,
      } = await until("A started the run", () => records<StartedLine>(a, "started").at(0));
      const { at: frozenAt } = await until("A froze in its final transaction", () =>
        records<{ at: number }>(a, "frozen").at(0),
      );
      await until("A stopped", () => stopped(aPid));

      // A holds the run: RUNNING under its epoch, every tool run, the row locked by its transaction.
      const held = (await inspector.getRun(runId)) as RunRecord;
      expect(held).toMatchObject({ state: "RUNNING", leaseOwner: aWorker });
      expect(await rowUnlocked(db, schema, runId)).toBe(false);
      await leaseLapsed(inspector, runId);
      b = await startWorkerB(execFile, new PostgresBackend({ connectionString: db.url, schema }), bLog);

      if (idleMs === 0) {
        // B's sweeps run every 50 ms against a lease that lapsed: for 3 s, nothing moves.
        await sleep(3000);
        expect(await inspector.getRun(runId)).toMatchObject({
          state: "RUNNING",
          leaseOwner: aWorker,
          epoch: held.epoch,
        });
        expect((await inspector.listTransitions(runId)).map((t) => t.to)).toEqual(["PENDING", "RUNNING"]);
        expect(await rowUnlocked(db, schema, runId)).toBe(false);
        // A killed: its connection closes, the server rolls its transaction back, B goes on.
        a.proc.kill("SIGKILL");
        expect((await ended(b, runId)).state).toBe("COMPLETED");
        return;
      }

      // B's takeover shows when the server has ended A's transaction, not when the lease lapsed.
      // (The INTERRUPTED transition's time is when B asked for it: B then waited for the lock.)
      await until("B took the run over", async () => ((await inspector.getRun(runId)) as RunRecord).epoch > held.epoch);
      const takenOverAt = Date.now();
      expect(takenOverAt).toBeGreaterThanOrEqual(frozenAt + idleMs);
      const done = await ended(b, runId);
      expect(done.state).toBe("COMPLETED");
      expect(await stopped(aPid)).toBe(true);
      const transitions = await inspector.listTransitions(runId);
      const steps = await inspector.loadSteps(runId);
      const taken = { run: await inspector.getRun(runId), transitions, steps };

      const interrupted = transitions.find((t) => t.to === "INTERRUPTED") as TransitionRecord;
      expect(interrupted.actor.id).toBe(b.workerId);
      expect(interrupted.reason).toContain(`worker ${aWorker} was lost while the run was RUNNING`);
      expect(transitions.map((t) => `${t.from ?? "-"}>${t.to}`)).toEqual(TAKEN_OVER);
      expect(transitions.map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(transitions.at(-1)?.actor).toEqual({ kind: "worker", id: b.workerId });
      // One row per step, and the output is what the journal holds.
      expect(steps.map((s) => s.seq)).toEqual(Array.from({ length: FENCING_TOOLS }, (_, i) => i + 1));
      expect(steps.every((s) => s.status === "completed")).toBe(true);
      expect(done.output).toEqual({ results: steps.map((s) => s.result) });
      // Tools A finished before it froze were not run again by B.
      const starts = (seq: number) => executions(execFile).filter((e) => e.seq === seq && e.phase === "start");
      for (let seq = 1; seq < FENCING_TOOLS; seq++) expect(starts(seq).map((e) => e.pid)).toEqual([aPid]);
      expect(starts(FENCING_TOOLS).length).toBeLessThanOrEqual(2);

      // Wake A: the server has ended its session, so the end of its transaction fails, and it
      // writes nothing more.
      const resumedAt = Date.now();
      const linesBefore = a.lines().length;
      a.proc.kill("SIGCONT");
      const failed = await until("A's final transition failed", () =>
        records<Write>(a, "write").find((w) => w.op === "transition" && w.to === "COMPLETED"),
      );
      expect(failed.outcome).not.toBe("ok");
      await until("A saw the run end", () => records(a, "final").at(0));
      await sleep(500);
      expect({
        run: await inspector.getRun(runId),
        transitions: await inspector.listTransitions(runId),
        steps: await inspector.loadSteps(runId),
      }).toEqual(taken);
      const late = records<Write>(a, "write").filter((w) => w.at >= resumedAt);
      for (const w of late) expect(w.outcome).not.toBe("ok");
      console.log(
        `frozen in a transaction (idle bound ${idleMs} ms): A ${aWorker} froze at +0 ms; B ${b.workerId} took over at +${takenOverAt - frozenAt} ms\n${transitionLog(transitions)}\nA after SIGCONT:\n${a
          .lines()
          .slice(linesBefore)
          .map((l) => `  ${l}`)
          .join("\n")}`,
      );
      // Losing the run is not a crash: A shuts down cleanly when asked.
      expect(a.proc.exitCode).toBeNull();
      a.proc.stdin.end("exit\n");
      expect(await Promise.race([a.exited, sleep(15_000).then(() => undefined)])).toEqual({ code: 0, signal: null });
    } finally {
      await b?.shutdown({ graceMs: 0 });
      await inspector.close();
    }
  });
});
