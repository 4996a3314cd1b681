import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import type { RunRecord, Runtime, RuntimeBackend, StepRecord, TransitionRecord } from "../src/index.ts";
import { PostgresBackend } from "../src/postgres.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { FENCING_TOOLS, TOOL_MS } from "./fencing/fencing-agent.ts";
import {
  ended,
  executions,
  leaseLapsed,
  ran,
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
 * Fencing (DESIGN §4, leases and fencing): worker A, a child process with a 600 ms lease, is
 * frozen with SIGSTOP inside a tool until its lease has lapsed; worker B (a runtime in this
 * process) takes the run over — INTERRUPTED naming A, RESUMING, RUNNING — and finishes it. Then A
 * is resumed with SIGCONT: its tool in flight finishes, and nothing A does after the takeover may
 * reach the store. The run must be COMPLETED once, by B, with B's output; the transition log
 * gapless; the journal one row per step, the frozen step and those after it written under B's
 * epoch with B's results; and the file of tool executions must show the frozen tool ran at most
 * twice (once in A, once in B) and no later tool ran in A.
 *
 * Two ways for A to learn it lost the run, both tested: `renewal` — as in production: A's first
 * renewal after waking reports the lease lost and A drops the run (on SQLite the renewal, being
 * synchronous, stops the run before the tool's result is handed on, so A attempts no write; on
 * PostgreSQL the result's write is usually on its way already and is refused); `fence` — A's
 * renewals are blinded (told nothing), so A goes on, and the write of its frozen step's result
 * (with the next step's start record) must be refused by the epoch fence (LeaseLostError).
 *
 * On SQLite the workers share a file, on PostgreSQL a schema.
 */

const root = mkdtempSync(join(tmpdir(), "cairn-fencing-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

type Kind = "sqlite" | "postgres";
type Mode = "renewal" | "fence";

/** Where the two workers meet: a SQLite file or a PostgreSQL schema. */
interface Store {
  args: [target: string, schema: string];
  open(): RuntimeBackend;
  /**
   * Whether another connection can take the lock B needs now. A process frozen in the middle of
   * a write transaction (SQLite's write lock, or a lock on the run's row) would stall B on the
   * lock instead of testing the fence, so the test never freezes A there.
   */
  unlocked(runId: string): Promise<boolean>;
}

function sqliteStore(dir: string): Store {
  const path = join(dir, "cairn.db");
  return {
    args: [path, "-"],
    open: () => new SqliteBackend({ path }),
    unlocked: async () => {
      let probe: Database.Database | undefined;
      try {
        probe = new Database(path, { timeout: 0 });
        probe.exec("BEGIN IMMEDIATE");
        probe.exec("ROLLBACK");
        return true;
      } catch (error) {
        // SQLITE_BUSY and its extended codes (SQLITE_BUSY_RECOVERY, …).
        if (String((error as { code?: string }).code).startsWith("SQLITE_BUSY")) return false;
        throw error;
      } finally {
        probe?.close();
      }
    },
  };
}

function postgresStore(db: TestDatabase): Store {
  const schema = db.schema("fencing");
  return {
    args: [db.url, schema],
    open: () => new PostgresBackend({ connectionString: db.url, schema }),
    unlocked: (runId) => rowUnlocked(db, schema, runId),
  };
}

describe.each(["sqlite", "postgres"] as const)("fencing on %s", (kind: Kind) => {
  let database: TestDatabase | undefined;
  beforeAll(async () => {
    if (kind === "postgres") database = await startTestDatabase();
  });
  afterAll(async () => {
    await database?.close();
  });

  it.each([
    ["renewal", "a renewal tells the frozen worker it lost the lease"],
    ["fence", "renewals blinded: the epoch fence alone refuses the frozen worker's writes"],
  ] as const)(
    "a worker frozen past its lease writes nothing after the takeover (%s: %s)",
    async (mode: Mode, _what: string) => {
      const dir = mkdtempSync(join(root, `${kind}-${mode}-`));
      const store = kind === "sqlite" ? sqliteStore(dir) : postgresStore(database as TestDatabase);
      const execFile = join(dir, "executions");
      const inspector = store.open();
      await inspector.init();
      const bLog: string[] = [];
      let b: Runtime | undefined;

      const a = startChild([kind, ...store.args, execFile, mode]);
      onTestFailed(() => {
        console.error(`worker A said:\n${a.lines().join("\n")}\n${a.err()}`);
        console.error(`worker B said:\n${bLog.join("\n")}`);
        console.error(`executions:\n${existsSync(execFile) ? readFileSync(execFile, "utf8") : "(none)"}`);
      });
      try {
        const started = await until("A started the run", () => records<StartedLine>(a, "started")[0]);
        const { runId, workerId: aWorker, pid: aPid } = started;

        // Freeze A inside a tool (after tool 1, so A has a step of its own that B must replay),
        // outside any write transaction; a freeze that came too late (the tool had ended) or inside
        // one is undone, and A is frozen in a later tool instead.
        let frozenAt = 0;
        let k = 2;
        for (;;) {
          if (k >= FENCING_TOOLS) throw new Error("could not freeze A inside a tool");
          const seq = k;
          await until(`A starts tool ${seq}`, () => ran(execFile, seq, aPid, "start"));
          frozenAt = Date.now();
          a.proc.kill("SIGSTOP");
          await until("A stopped", () => stopped(aPid));
          if (ran(execFile, k, aPid, "end")) {
            a.proc.kill("SIGCONT");
            k += 1;
            continue;
          }
          if (await store.unlocked(runId)) break;
          a.proc.kill("SIGCONT");
          await sleep(2);
        }

        // A holds the run under its epoch; its start record of tool k is stored, its result is not.
        const held = (await inspector.getRun(runId)) as RunRecord;
        expect(held.state).toBe("RUNNING");
        expect(held.leaseOwner).toBe(aWorker);
        const aEpoch = held.epoch;
        const frozenStep = (await inspector.loadSteps(runId)).find((s) => s.seq === k);
        expect(frozenStep).toMatchObject({ status: "started", epoch: aEpoch });

        await leaseLapsed(inspector, runId);
        b = await startWorkerB(execFile, store.open(), bLog);
        const bWorker = b.workerId as string;
        expect((await ended(b, runId)).state).toBe("COMPLETED");
        expect(await stopped(aPid)).toBe(true);
        const taken = { transitions: await inspector.listTransitions(runId), steps: await inspector.loadSteps(runId) };

        // Wake A. Its tool in flight finishes; it must drop the run without writing anything.
        const resumedAt = Date.now();
        const linesBefore = a.lines().length;
        a.proc.kill("SIGCONT");
        await until("A's frozen tool finished", () => ran(execFile, k, aPid, "end"));
        await until("A saw the run end", () => records(a, "final")[0]);
        if (mode === "renewal") {
          await until("A's renewal found the lease lost", () =>
            a.lines().some((l) => l.startsWith(`warn lease on run ${runId} lost`)),
          );
        } else {
          await until("A's write refused", () =>
            records<Write>(a, "write").some((w) => w.at >= resumedAt && w.outcome === "LeaseLostError"),
          );
        }
        // Give a misbehaving A room to show it: nothing new from it (output, tool executions) for
        // twice a tool's length before it is asked to exit.
        let seen = "";
        let quietSince = Date.now();
        await until("A quiet", () => {
          const now = `${a.lines().length}/${executions(execFile).length}`;
          if (now !== seen) [seen, quietSince] = [now, Date.now()];
          return Date.now() - quietSince >= 2 * TOOL_MS;
        });
        // Still alive: losing the run is not a crash. Then it shuts down cleanly when asked.
        expect(a.proc.exitCode).toBeNull();
        expect(a.proc.signalCode).toBeNull();
        a.proc.stdin.end("exit\n");
        const exit = await Promise.race([a.exited, sleep(15_000).then(() => undefined)]);
        if (!exit) a.proc.kill("SIGKILL");
        expect(exit).toEqual({ code: 0, signal: null });
        expect(a.lines().at(-1)).toBe("exiting");
        await b.shutdown({ graceMs: 0 });
        b = undefined;

        const run = (await inspector.getRun(runId)) as RunRecord;
        const transitions = await inspector.listTransitions(runId);
        const steps = await inspector.loadSteps(runId);
        console.log(
          `fencing on ${kind} (${mode}): A ${aWorker} frozen in tool ${k} at epoch ${aEpoch}; B ${bWorker} finished at epoch ${run.epoch}\n${transitionLog(transitions)}\nA after SIGCONT:\n${a
            .lines()
            .slice(linesBefore)
            .map((l) => `  ${l}`)
            .join("\n")}`,
        );

        // Nothing reached the store after A woke: the history is what B left.
        expect({ transitions, steps }).toEqual(taken);

        // The run: COMPLETED once, by B, with B's output.
        const bPid = process.pid;
        const expected = Array.from({ length: FENCING_TOOLS }, (_, i) => `${i + 1}:${i + 1 < k ? aPid : bPid}`);
        expect(run).toMatchObject({ state: "COMPLETED", output: { results: expected }, leaseOwner: null });
        const bEpoch = run.epoch;
        // One epoch for the takeover (INTERRUPTED), one for B's claim; no other claim in between.
        expect(bEpoch).toBe(aEpoch + 2);

        // The transition log: gapless, A's claim then B's takeover and finish, one COMPLETED by B.
        expect(transitions.map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6]);
        expect(transitions.map((t) => `${t.from ?? "-"}>${t.to}`)).toEqual(TAKEN_OVER);
        expect(transitions.filter((t) => t.to === "COMPLETED")).toHaveLength(1);
        const [, claim, interrupted, resuming, resumed, completed] = transitions as TransitionRecord[];
        expect(claim?.actor).toEqual({ kind: "worker", id: aWorker });
        expect(interrupted?.actor).toEqual({ kind: "system", id: bWorker });
        expect(interrupted?.reason).toContain(`worker ${aWorker} was lost while the run was RUNNING (its lease lapsed`);
        expect(resuming?.actor).toEqual({ kind: "system", id: bWorker });
        expect(resumed?.actor).toEqual({ kind: "worker", id: bWorker });
        expect(completed?.actor).toEqual({ kind: "worker", id: bWorker });

        // The journal: one row per step. Steps before k are A's (committed before the freeze, and
        // replayed by B); step k and those after it were written under B's epoch with B's results.
        expect(steps.map((s) => s.seq)).toEqual(Array.from({ length: FENCING_TOOLS }, (_, i) => i + 1));
        for (const step of steps as StepRecord[]) {
          const mine = step.seq < k;
          expect(step).toMatchObject({
            kind: "tool",
            name: "step",
            status: "completed",
            result: `${step.seq}:${mine ? aPid : bPid}`,
            epoch: mine ? aEpoch : bEpoch,
          });
        }
        // The frozen step shows A's attempt closed as interrupted and B's that completed it.
        const kStep = steps.find((s) => s.seq === k) as StepRecord;
        expect(kStep.attempts.map((t) => t.error?.name ?? "ok")).toEqual(["AttemptInterrupted", "ok"]);

        // Outside the store: tools before k ran once, in A; tool k twice, A first then B; the ones
        // after it once, in B; none after k ever started in A.
        const ex = executions(execFile);
        for (let seq = 1; seq <= FENCING_TOOLS; seq++) {
          const starts = ex.filter((e) => e.seq === seq && e.phase === "start").map((e) => e.pid);
          const ends = ex.filter((e) => e.seq === seq && e.phase === "end").map((e) => e.pid);
          if (seq < k) {
            expect({ seq, starts, ends }).toEqual({ seq, starts: [aPid], ends: [aPid] });
          } else if (seq === k) {
            // A's end comes last: it was frozen until B had finished the run.
            expect({ seq, starts, ends }).toEqual({ seq, starts: [aPid, bPid], ends: [bPid, aPid] });
          } else {
            expect({ seq, starts, ends }).toEqual({ seq, starts: [bPid], ends: [bPid] });
          }
        }
        expect(ex.filter((e) => e.pid === aPid && e.seq > k)).toEqual([]);

        // A's own account: every write it made before the freeze went through; every write it tried
        // after waking was refused with LeaseLostError (and it made none while frozen).
        const writes = records<Write>(a, "write");
        for (const w of writes.filter((w) => w.at < frozenAt)) expect(w.outcome).toBe("ok");
        expect(writes.filter((w) => w.at >= frozenAt && w.at < resumedAt)).toEqual([]);
        const late = writes.filter((w) => w.at >= resumedAt);
        for (const w of late) expect(w).toMatchObject({ outcome: "LeaseLostError" });
        if (mode === "fence") {
          // The frozen step's result (with the next step's start record riding on the same commit)
          // was the write refused; nothing after it, not even the final transition, was attempted.
          expect(late.length).toBeGreaterThanOrEqual(1);
          expect(late[0]).toMatchObject({ op: "saveSteps", epoch: aEpoch });
          expect(late[0]?.seqs).toContain(k);
          expect(late.some((w) => w.op === "transition")).toBe(false);
        } else {
          expect(a.lines().some((l) => l.startsWith(`warn lease on run ${runId} lost`))).toBe(true);
        }
        expect(a.lines().filter((l) => l.startsWith("error "))).toEqual([]);
        expect(bLog.filter((l) => l.startsWith("error "))).toEqual([]);
      } finally {
        await b?.shutdown({ graceMs: 0 });
        await inspector.close();
      }
    },
  );
});
