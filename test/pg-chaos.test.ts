import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, onTestFailed } from "vitest";
import { type Applied, type Bank, type LedgerEntry, startBank } from "../examples/money-transfer/bank.ts";
import { moneyTransferAgent } from "../examples/money-transfer/transfer.ts";
import type { RunRecord, RunState, StepRecord, TransitionRecord } from "../src/index.ts";
import { canTransition, Runtime, silentLogger } from "../src/index.ts";
import { PostgresBackend } from "../src/postgres.ts";
import { type Server, startServer } from "./helpers/restartable-postgres.ts";
import { ACCOUNTS, chaosPlan, expectedBalances, KILLS, RUNS, TOTAL, type Transfer, WORKERS } from "./pg-chaos/plan.ts";

/**
 * Many workers on PostgreSQL, proven under crashes (issue 5). Seeded and repeatable: the seed is
 * printed, `CAIRN_CHAOS_SEED=<n>` replays one (test/pg-chaos/plan.ts derives everything from it).
 *
 * The test starts its own embedded PostgreSQL (whatever CAIRN_TEST_DATABASE_URL says: it must
 * restart the server), one bank in this process (examples/money-transfer/bank.ts, its own SQLite
 * file, de-duplicating by idempotency key) and 3 worker processes (test/pg-chaos/worker-child.ts:
 * the money_transfer agent, lease 1 s, each tool held 1.2 s after the bank answered so that kills
 * land between the bank applying an operation and Cairn recording it). It starts 200 transfers, one
 * every 300 ms, 10 of them into a closed account (the deposit is refused and the withdrawal is
 * refunded: COMPENSATED). Meanwhile it SIGKILLs a worker 30 times (the slot named by the plan, once
 * that worker is up and, within 4 s, drives a run), restarting each killed worker at once, and in
 * the middle stops the server (fast or immediate shutdown, by the seed) for 1.5 to 3 s while runs
 * are in flight, then starts it again.
 *
 * Then: every run ended COMPLETED (COMPENSATED for the closed account) with the output its input
 * and the bank's ledger say (a compensated run keeps the refusal as its error); the ledger holds
 * exactly one application per idempotency key (a withdrawal and a deposit per completed run, a
 * withdrawal and a refund per compensated one, nothing else); Cairn's journal records each of
 * those effects applied with the bank's transaction as its receipt; every balance is what the
 * transfers make it and the total is unchanged; every transition log is gapless (ids 1..n, the
 * first from nowhere to PENDING, each from where the last left the run, each legal, the last the
 * run's state); most kills cut runs off and the restart did too (the premises); no worker process
 * died but by the test's hand; and the workers still stop gracefully. The counts are printed.
 * The checks are soft: a failure reports every run that is wrong, not only the first.
 */

const CHILD = join(import.meta.dirname, "pg-chaos", "worker-child.ts");
/** How long each tool waits after the bank answered (examples/money-transfer: MONEY_DEMO_DELAY_MS). */
const TOOL_DELAY_MS = 1200;
const SCHEMA = "chaos";
const ENDINGS: ReadonlySet<RunState> = new Set([
  "COMPLETED",
  "COMPENSATED",
  "FAILED",
  "BLOCKED",
  "CANCELLED",
  "NEEDS_RECONCILIATION",
]);

const seed = Number(process.env.CAIRN_CHAOS_SEED ?? Date.now() % 1_000_000);
const root = mkdtempSync(join(tmpdir(), "cairn-pg-chaos-"));
let server: Server | undefined;
let bank: Bank | undefined;

afterAll(async () => {
  await bank?.close();
  await server?.stop().catch(() => {});
  if (server) rmSync(server.dir, { recursive: true, force: true });
  rmSync(root, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `check` (whose errors, e.g. while the server is down, count as "not yet"). */
async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${last})` : ""}`);
    await sleep(100);
  }
}

interface Child {
  proc: ChildProcessWithoutNullStreams;
  slot: number;
  lines: string[];
  err: () => string;
  /** Runs this worker drives now, as its own transitions tell. */
  held: Set<string>;
  /** Runs it dropped on a storage error (the server was down), as it logged. */
  dropped: string[];
  /** Its `ready` line: worker id and pid. */
  ready: Promise<{ workerId: string; pid: number }>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Set before the test kills or stops it: any other exit is a crash. */
  ending: boolean;
}

/** Each run a worker drives starts with its RUNNING (or COMPENSATING) and ends with its next transition. */
const DRIVING: ReadonlySet<string> = new Set(["RUNNING", "COMPENSATING"]);

function startWorker(url: string, bankUrl: string, slot: number, crashes: string[]): Child {
  const proc = spawn(process.execPath, ["--import", "tsx", CHILD, url, SCHEMA, bankUrl], {
    env: { ...process.env, MONEY_DEMO_DELAY_MS: String(TOOL_DELAY_MS) },
  });
  let pending = "";
  let err = "";
  let onReady: (ready: { workerId: string; pid: number }) => void = () => {};
  const child: Child = {
    proc,
    slot,
    lines: [],
    err: () => err,
    held: new Set(),
    dropped: [],
    ready: new Promise((resolve) => (onReady = resolve)),
    exited: new Promise((resolve) => proc.on("close", (code, signal) => resolve({ code, signal }))),
    ending: false,
  };
  proc.stdout.on("data", (d) => {
    pending += d;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      child.lines.push(line);
      if (line.startsWith("ready ")) onReady(JSON.parse(line.slice(6)));
      if (line.startsWith("transition ")) {
        const t = JSON.parse(line.slice(11)) as { runId: string; to: string };
        if (DRIVING.has(t.to)) child.held.add(t.runId);
        else child.held.delete(t.runId);
      }
      // Let go of: a lease lost to another worker, or a run dropped (on a storage error: the server was down).
      const gone = /^warn (?:lease on run|dropped run) (\S+?):? /.exec(line)?.[1];
      if (gone) child.held.delete(gone);
      const dropped = /^warn dropped run (\S+): PostgreSQL /.exec(line)?.[1];
      if (dropped) child.dropped.push(dropped);
    }
  });
  proc.stderr.on("data", (d) => (err += d));
  void child.exited.then(({ code, signal }) => {
    if (!child.ending) crashes.push(`worker in slot ${slot} (pid ${proc.pid}) exited ${code ?? signal}: ${err}`);
  });
  return child;
}

const keyOf = (op: "withdraw" | "deposit" | "refund", transferId: string) => `money_transfer/${op}:${transferId}`;

/** The bank's answer for an application, as the tools return it. */
const applied = (e: LedgerEntry): Applied => ({
  id: `tx_${e.id}`,
  kind: e.kind,
  account: e.account,
  amount: e.amount,
  balance: e.balance,
  key: e.key,
});

describe("PostgreSQL: 3 workers, 200 money transfers, 30 SIGKILLs and a server restart", () => {
  it(`seed ${seed}: every run ends right, no money moved twice or lost, every log gapless`, async () => {
    const plan = chaosPlan(seed);
    console.log(
      `pg chaos seed ${seed} (replay with CAIRN_CHAOS_SEED=${seed}): ${RUNS} runs, ${KILLS} kills, ` +
        `server restart (${plan.restartMode}, ${plan.outageMs} ms down) at +${plan.restartAtMs} ms`,
    );
    const began = Date.now();
    // Its own temp directory: as root, the server's user must be able to reach it.
    server = await startServer(mkdtempSync(join(tmpdir(), "cairn-pg-chaos-pg-")), { maxConnections: 200 });
    const { url } = server;
    bank = await startBank({ db: join(root, "bank.db"), seed: ACCOUNTS });
    const b = bank;
    const agent = moneyTransferAgent({ bank: b.url });
    // Starts runs and reads the store; executes nothing.
    const client = new Runtime({
      agents: [agent],
      backend: new PostgresBackend({ connectionString: url, schema: SCHEMA, max: 4, connectTimeoutMs: 2000 }),
      logger: silentLogger,
      worker: false,
    });
    await client.start();

    const crashes: string[] = [];
    const slots: Child[] = Array.from({ length: WORKERS }, (_, slot) => startWorker(url, b.url, slot, crashes));
    const retired: Child[] = [];
    onTestFailed(() => {
      for (const w of [...retired, ...slots]) {
        console.error(`--- worker slot ${w.slot} pid ${w.proc.pid} (last 20 lines)\n${w.lines.slice(-20).join("\n")}`);
        if (w.err()) console.error(`--- its stderr\n${w.err()}`);
      }
      console.error(`--- server log (tail)\n${(server as Server).logs().slice(-3000)}`);
    });

    const kills: {
      slot: number;
      workerId: string;
      pid: number;
      held: string[];
      /** When, since the first run was started. */
      atMs: number;
      /** How long after the planned time (waiting for the worker to be up and to drive a run). */
      lateMs: number;
    }[] = [];
    let restarts = 0;
    let serverRestarts = 0;
    const outage = { stoppedAt: 0, startedAt: 0 };
    let serverRecovered = false;
    let startRetries = 0;
    let done = false;
    try {
      await Promise.all(
        slots.map((w) =>
          Promise.race([
            w.ready,
            sleep(60_000).then(() => {
              throw new Error(`worker ${w.slot} not ready in 60 s: ${w.err()}`);
            }),
          ]),
        ),
      );
      const t0 = Date.now();
      const at = (ms: number) => sleep(Math.max(0, t0 + ms - Date.now()));

      // Starts the runs on schedule; a start that fails (the server is down) is tried again with
      // the same key, which finds the run if the failed attempt did create it.
      const ids = new Map<string, string>();
      const starting = (async () => {
        for (const t of plan.transfers) {
          await at(t.startAtMs);
          const input = { transferId: t.transferId, from: t.from, to: t.to, amount: t.amount };
          for (;;) {
            try {
              ids.set(t.transferId, (await client.run(agent, "transfer", input, { key: t.transferId })).id);
              break;
            } catch (error) {
              startRetries += 1;
              if (done || startRetries > 2000) throw error;
              await sleep(200);
            }
          }
        }
      })();

      const killing = (async () => {
        const restartServer = async () => {
          const s = server as Server;
          const logsBefore = s.logs().length;
          outage.stoppedAt = Date.now();
          await (plan.restartMode === "fast" ? s.stop() : s.crash());
          await sleep(plan.outageMs);
          await s.start();
          outage.startedAt = Date.now();
          serverRestarts += 1;
          serverRecovered = s.logs().slice(logsBefore).includes("automatic recovery in progress");
        };
        let lastKillAt = 0;
        for (const kill of plan.kills) {
          if (serverRestarts === 0 && kill.atMs > plan.restartAtMs) {
            await at(plan.restartAtMs);
            // Mid-run: not on the heels of a kill, and while the workers up drive runs.
            await sleep(lastKillAt + 1000 - Date.now());
            await until(
              "the workers to drive runs",
              async () => slots.reduce((n, w) => n + w.held.size, 0) >= 3,
              6000,
            ).catch(() => {});
            await restartServer();
          }
          await at(kill.atMs);
          // Spread out even when behind the plan (a worker slow to come back up).
          await sleep(lastKillAt + 600 - Date.now());
          const due = Date.now();
          const target = slots[kill.slot] as Child;
          const { workerId, pid } = await Promise.race([
            target.ready,
            sleep(60_000).then(() => {
              throw new Error(`worker in slot ${kill.slot} not ready in 60 s: ${target.err()}`);
            }),
          ]);
          // Mid-run: wait (a while) for the worker to drive a run.
          await until("the worker to drive a run", async () => target.held.size > 0, 4000).catch(() => {});
          const held = [...target.held];
          target.ending = true;
          lastKillAt = Date.now();
          target.proc.kill("SIGKILL");
          kills.push({ slot: kill.slot, workerId, pid, held, atMs: lastKillAt - t0, lateMs: lastKillAt - due });
          const { signal } = await target.exited;
          expect(signal, `worker ${workerId} should die by SIGKILL`).toBe("SIGKILL");
          retired.push(target);
          slots[kill.slot] = startWorker(url, b.url, kill.slot, crashes);
          restarts += 1;
        }
      })();
      await Promise.all([starting, killing]);
      const chaosMs = Date.now() - t0;

      const finals = await until(
        "every run to end",
        async () => {
          const runs = await client.listRuns({ agent: "money_transfer", limit: 1000 });
          return runs.length === RUNS && runs.every((r) => ENDINGS.has(r.state)) && runs;
        },
        120_000,
      ).catch(async (error: unknown) => {
        const runs = await client.listRuns({ agent: "money_transfer", limit: 1000 }).catch(() => []);
        const open = runs.filter((r) => !ENDINGS.has(r.state));
        throw new Error(
          `${error}\n${runs.length} runs, not ended:\n${open.map((r) => `${r.id} ${r.key} ${r.state} lease ${r.leaseOwner}`).join("\n")}`,
        );
      });
      const drainMs = Date.now() - t0 - chaosMs;

      // ── The chaos happened as planned ──────────────────────────────────────────────────────
      expect.soft(kills).toHaveLength(KILLS);
      expect.soft(restarts).toBe(KILLS);
      expect.soft(serverRestarts).toBe(1);
      // The premise of an immediate shutdown: the server recovered from its WAL.
      expect.soft(serverRecovered).toBe(plan.restartMode === "immediate");
      // No worker process died but by the test's hand.
      expect.soft(crashes).toEqual([]);

      // ── Every run ended as its input says ──────────────────────────────────────────────────
      const byKey = new Map<string, RunRecord>(finals.map((r) => [r.key as string, r]));
      expect.soft([...byKey.keys()].sort()).toEqual(plan.transfers.map((t) => t.transferId).sort());
      const states: Record<string, number> = {};
      for (const r of finals) states[r.state] = (states[r.state] ?? 0) + 1;
      const wrongEnd = plan.transfers
        .map((t) => ({ t, run: byKey.get(t.transferId) }))
        .filter(({ t, run }) => run?.state !== (t.compensates ? "COMPENSATED" : "COMPLETED"))
        .map(({ t, run }) => `${t.transferId} → ${t.to}: ${run?.state} ${JSON.stringify(run?.error)}`);
      expect.soft(wrongEnd).toEqual([]);

      // ── The bank's ledger: each key applied once, exactly the operations the transfers make ──
      const ledger = b.store.ledger();
      const perKey = new Map<string, LedgerEntry[]>();
      for (const e of ledger) perKey.set(e.key, [...(perKey.get(e.key) ?? []), e]);
      const duplicates = [...perKey].filter(([, es]) => es.length > 1).map(([key, es]) => `${key} ×${es.length}`);
      expect.soft(duplicates).toEqual([]);
      const wanted = plan.transfers.flatMap((t) => [
        keyOf("withdraw", t.transferId),
        keyOf(t.compensates ? "refund" : "deposit", t.transferId),
      ]);
      expect.soft([...perKey.keys()].sort()).toEqual([...wanted].sort());
      expect.soft(ledger).toHaveLength(wanted.length);
      const refunds = ledger.filter((e) => e.kind === "refund").map((e) => e.key);
      expect
        .soft(refunds.sort())
        .toEqual(plan.transfers.filter((t) => t.compensates).map((t) => keyOf("refund", t.transferId)));
      // The ledger's one application of an operation (a stand-in that matches nothing when missing).
      const entry = (op: "withdraw" | "deposit" | "refund", t: Transfer): LedgerEntry =>
        perKey.get(keyOf(op, t.transferId))?.[0] ?? {
          id: -1,
          key: `${keyOf(op, t.transferId)} (not in the ledger)`,
          kind: op,
          account: "(none)",
          amount: -1,
          balance: -1,
          at: 0,
        };
      for (const t of plan.transfers) {
        const legs: ["withdraw" | "deposit" | "refund", string][] = [
          ["withdraw", t.from],
          t.compensates ? ["refund", t.from] : ["deposit", t.to],
        ];
        for (const [op, account] of legs) {
          const e = entry(op, t);
          expect.soft({ kind: e.kind, account: e.account, amount: e.amount }, `${op} of ${t.transferId}`).toEqual({
            kind: op,
            account,
            amount: t.amount,
          });
        }
      }
      // Money: every balance as the transfers make it, the total unchanged.
      expect.soft(b.store.balances()).toEqual(expectedBalances(plan.transfers));
      expect.soft(b.store.total()).toBe(TOTAL);

      // ── Each run's output, journal and transition log ──────────────────────────────────────
      let transitionsChecked = 0;
      let interruptions = 0;
      let settledByStatus = 0;
      let compensationsInterrupted = 0;
      // Whom each INTERRUPTED names as lost: a killed worker (after its kill), or one that was alive
      // (its runs cut off by the server restart, or a lease that lapsed while it was stalled).
      const killedAt = new Map(kills.map((k) => [k.workerId, t0 + k.atMs]));
      const cutByKill = new Map<string, number>();
      let cutOtherwise = 0;
      const handedBack = new Set<string>();
      for (const t of plan.transfers) {
        const id = ids.get(t.transferId) as string;
        const { run, transitions, steps } = await client.history(id);
        expect.soft(run.key).toBe(t.transferId);
        const input = { transferId: t.transferId, from: t.from, to: t.to, amount: t.amount };
        expect.soft(run.input).toEqual(input);
        const tools = steps.filter((s) => s.kind === "tool");
        const step = (name: string) =>
          tools.find((s) => s.name === name) ?? ({ name, seq: -1, status: "missing" } as unknown as StepRecord);
        if (t.compensates) {
          expect.soft(run.output ?? null, `output of ${id}`).toBeNull();
          expect.soft(run.error?.message, `error of ${id}`).toMatch(/account_closed/);
          expect.soft(tools.map((s) => [s.name, s.status])).toEqual([
            ["withdraw", "completed"],
            ["deposit", "failed"],
            ["refund", "completed"],
          ]);
          expect.soft(step("deposit").effect?.status).toBe("not_applied");
          expect.soft(step("refund").effect?.compensates).toBe(step("withdraw").seq);
        } else {
          expect.soft(run.output, `output of ${id}`).toEqual({
            ...input,
            withdrawal: applied(entry("withdraw", t)),
            deposit: applied(entry("deposit", t)),
          });
          expect.soft(tools.map((s) => [s.name, s.status])).toEqual([
            ["withdraw", "completed"],
            ["deposit", "completed"],
          ]);
        }
        // Cairn's record of each applied effect names the bank's one transaction for its key.
        for (const op of t.compensates ? (["withdraw", "refund"] as const) : (["withdraw", "deposit"] as const)) {
          const s = step(op);
          const e = entry(op, t);
          expect.soft(s.effect?.idempotencyKey).toBe(e.key);
          expect.soft(s.effect?.status, `effect ${op} of ${id}`).toBe("applied");
          expect
            .soft(s.effect?.receipt, `receipt of ${op} of ${id}`)
            .toEqual({ bankTx: `tx_${e.id}`, balance: e.balance });
          expect.soft(s.result).toEqual(applied(e));
          if (s.effect?.settledBy === "status") settledByStatus += 1;
        }

        checkLog(id, transitions, run.state);
        transitionsChecked += transitions.length;
        for (const [i, tr] of transitions.entries()) {
          if (tr.to !== "INTERRUPTED") continue;
          interruptions += 1;
          if (transitions[i - 1]?.to === "COMPENSATING") compensationsInterrupted += 1;
          const lost = /worker (\S+) was lost/.exec(tr.reason)?.[1] ?? "";
          const killed = killedAt.get(lost);
          if (killed !== undefined && tr.at >= killed) cutByKill.set(lost, (cutByKill.get(lost) ?? 0) + 1);
          else cutOtherwise += 1;
          // A worker whose write failed and that could still record it (the server was back).
          if (tr.reason.includes("a journal write failed")) handedBack.add(id);
        }
      }
      // The kills landed mid-run: most killed workers had runs cut off by their death (a worker
      // restarted a moment before may hold nothing yet).
      const killsThatCut = kills.filter((k) => (cutByKill.get(k.workerId) ?? 0) > 0).length;
      expect
        .soft(killsThatCut, "kills after which a run was recovered from the killed worker")
        .toBeGreaterThanOrEqual(KILLS / 2);
      const runsCut = kills.reduce((n, k) => n + (cutByKill.get(k.workerId) ?? 0), 0);
      // The restart hit runs in flight: a worker whose write failed while the server was down
      // dropped the run (recovered once its lease lapsed) or, if it could, handed it back
      // INTERRUPTED; all of them ended right, as checked above.
      const droppedRuns = new Set([...retired, ...slots].flatMap((w) => w.dropped));
      const cutByRestart = new Set([...droppedRuns, ...handedBack]);
      expect.soft(cutByRestart.size, "runs cut off by the server restart").toBeGreaterThan(0);
      const lates = kills.map((k) => k.lateMs).sort((x, y) => x - y);
      const repeatedRequests = wanted.reduce((n, key) => n + Math.max(0, b.requests(key) - 1), 0);

      const byState = Object.entries(states)
        .map(([s, n]) => `${n} ${s}`)
        .join(", ");
      console.log(
        [
          `pg chaos seed ${seed}: runs by end state: ${byState}`,
          `kills done: ${kills.length} (${killsThatCut} cut off runs, ${runsCut} runs recovered from killed workers; ` +
            `workers held ${kills.reduce((n, k) => n + k.held.length, 0)} runs at their kills), workers restarted: ${restarts}`,
          `kills at (ms, slot): ${kills.map((k) => `${k.atMs}/${k.slot}`).join(" ")}; late (waiting for the worker to be up ` +
            `and to drive a run): median ${lates[lates.length >> 1]} ms, max ${lates.at(-1)} ms`,
          `PostgreSQL restarts: ${serverRestarts} (${plan.restartMode}, down ${outage.startedAt - outage.stoppedAt} ms at +${outage.stoppedAt - t0} ms; ` +
            `${cutByRestart.size} runs cut off by it: ${droppedRuns.size} dropped by their worker on a storage error, ` +
            `${handedBack.size} handed back INTERRUPTED; ${cutOtherwise} INTERRUPTED naming a live worker; ` +
            `${startRetries} run starts retried)`,
          `effects applied: ${ledger.length} (${ledger.filter((e) => e.kind === "withdraw").length} withdrawals, ` +
            `${ledger.filter((e) => e.kind === "deposit").length} deposits, ${refunds.length} refunds), ` +
            `duplicates found: ${duplicates.length}, settled by the bank's /status: ${settledByStatus}, ` +
            `requests repeated to the bank: ${repeatedRequests}`,
          `transitions checked: ${transitionsChecked} (${interruptions} INTERRUPTED, ${compensationsInterrupted} of them while COMPENSATING)`,
          `money: total ${b.store.total()} (was ${TOTAL}); time: chaos ${chaosMs} ms, drain ${drainMs} ms, all ${Date.now() - began} ms`,
        ].join("\n  "),
      );

      // ── The workers still stop gracefully ──────────────────────────────────────────────────
      // (The one restarted after the last kill may still be starting.)
      await until(
        "the last workers up",
        async () => Promise.race([Promise.all(slots.map((w) => w.ready)), sleep(1000)]),
        60_000,
      );
      for (const w of slots) {
        w.ending = true;
        w.proc.kill("SIGTERM");
      }
      for (const w of slots) expect((await w.exited).code, `worker ${w.slot}: ${w.err()}`).toBe(143);
    } finally {
      done = true;
      for (const w of [...slots, ...retired]) {
        w.ending = true;
        if (w.proc.exitCode === null && w.proc.signalCode === null) w.proc.kill("SIGKILL");
      }
      await client.shutdown();
    }
  }, 280_000);
});

/** Gapless (ids 1..n), the first from nowhere, each from where the last left the run, each legal. */
function checkLog(id: string, transitions: TransitionRecord[], state: RunState): void {
  expect
    .soft(
      transitions.map((t) => t.id),
      `transition ids of ${id}`,
    )
    .toEqual(transitions.map((_, i) => i + 1));
  for (const [i, t] of transitions.entries()) {
    if (i === 0) {
      expect.soft(t.from, `first transition of ${id}`).toBeNull();
      expect.soft(t.to).toBe("PENDING");
      continue;
    }
    const before = transitions[i - 1] as TransitionRecord;
    expect.soft(t.from, `transition ${t.id} of ${id}`).toBe(before.to);
    expect.soft(canTransition(t.from as RunState, t.to), `${id} #${t.id}: ${t.from} -> ${t.to}`).toBe(true);
  }
  expect.soft(transitions.at(-1)?.to, `last transition of ${id}`).toBe(state);
}
