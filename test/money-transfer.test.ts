import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Applied, type Bank, type BankOptions, startBank } from "../examples/money-transfer/bank.ts";
import { moneyTransferAgent, type TransferOutput } from "../examples/money-transfer/transfer.ts";
import type { StepRecord } from "../src/index.ts";
import { Runtime, silentLogger } from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { cairn } from "./helpers/cli.ts";
import { RECOVERED_PATH, STRAIGHT_PATH } from "./helpers/paths.ts";
import { runTsxChild } from "./helpers/tsx-child.ts";

/**
 * The money-transfer example under crashes (DESIGN §5): Cairn's journal (SQLite) and the bank's
 * ledger (another SQLite file, behind HTTP, in this process) share no transaction. A child process
 * runs a transfer and SIGKILLs itself at each boundary of the withdraw and deposit effects (before
 * the intent, after it, after the bank applied the operation, after the result); a fresh process
 * resumes. The bank's ledger, counted per idempotency key, says whether money moved twice.
 */

const CHILD = join(import.meta.dirname, "money-transfer", "transfer-child.ts");
const root = mkdtempSync(join(tmpdir(), "cairn-money-"));
const banks: Bank[] = [];
afterAll(async () => {
  await Promise.all(banks.map((b) => b.close()));
  rmSync(root, { recursive: true, force: true });
});

const SEED = { alice: 100_000, bob: 50_000, carol: { balance: 20_000, closed: true } };
const TOTAL = 170_000;
const INPUT = { transferId: "t-1", from: "alice", to: "bob", amount: 2_500 };
const KEYS = {
  withdraw: "money_transfer/withdraw:t-1",
  deposit: "money_transfer/deposit:t-1",
  refund: "money_transfer/refund:t-1",
};
const NAIVE_KEYS = {
  withdraw: "money_transfer_naive/withdraw:t-1",
  deposit: "money_transfer_naive/deposit:t-1",
};

/** The output of an uncrashed transfer of INPUT on a fresh bank, written out by hand. */
const EXPECTED: TransferOutput = {
  ...INPUT,
  withdrawal: { id: "tx_1", kind: "withdraw", account: "alice", amount: 2_500, balance: 97_500, key: KEYS.withdraw },
  deposit: { id: "tx_2", kind: "deposit", account: "bob", amount: 2_500, balance: 52_500, key: KEYS.deposit },
};

async function bank(dir: string, options: Partial<BankOptions> = {}): Promise<Bank> {
  const started = await startBank({ db: join(dir, "bank.db"), seed: SEED, ...options });
  banks.push(started);
  return started;
}

interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** What a child prints when it ends. */
interface Outcome {
  runId: string;
  state: string;
  output: unknown;
  error: { code?: string; message: string } | null;
  steps: StepRecord[];
}

function child(args: string[]): Promise<ChildResult> {
  return runTsxChild(CHILD, args, 90_000);
}

function outcome(result: ChildResult): Outcome {
  expect(result.code, `the child should end cleanly\n${result.stderr}`).toBe(0);
  return JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}") as Outcome;
}

/** Starts a transfer in a child that kills itself at `point` of `tool`; checks that it died so. */
async function startAndKill(
  common: string[],
  input: object,
  kill: { tool: string; point: string },
  how: "lease" | "pid",
): Promise<void> {
  const first = await child([
    "start",
    ...common,
    "--input",
    JSON.stringify(input),
    "--tool",
    kill.tool,
    "--point",
    kill.point,
    "--lease-ms",
    how === "lease" ? "1000" : "600000",
  ]);
  expect(first.signal, `the first process should die by SIGKILL (code ${first.code})\n${first.stderr}`).toBe("SIGKILL");
}

const step = (o: { steps: StepRecord[] }, name: string) => {
  const found = o.steps.find((s) => s.kind === "tool" && s.name === name);
  expect(found, `a step ${name} in ${o.steps.map((s) => s.name).join(", ")}`).toBeDefined();
  return found as StepRecord;
};

async function transitions(db: string, runId: string): Promise<string[]> {
  const backend = new SqliteBackend({ path: db });
  await backend.init();
  try {
    return (await backend.listTransitions(runId)).map((t) => `${t.from ?? "-"}>${t.to}`);
  } finally {
    await backend.close();
  }
}

const POINTS = ["before-intent", "after-intent", "after-apply", "after-result"] as const;
const crashCases = (["withdraw", "deposit"] as const).flatMap((tool, t) =>
  POINTS.map((point, p) => ({ tool, point, how: (t + p) % 2 === 0 ? ("pid" as const) : ("lease" as const) })),
);

/** Which operations the bank applied before the resume, for a kill at (tool, point). */
function appliedBeforeResume(tool: "withdraw" | "deposit", point: (typeof POINTS)[number]) {
  const reachedBank = point === "after-apply" || point === "after-result";
  return tool === "withdraw"
    ? { withdraw: reachedBank ? 1 : 0, deposit: 0 }
    : { withdraw: 1, deposit: reachedBank ? 1 : 0 };
}

describe.concurrent("a transfer killed at every boundary of its effects, resumed by a fresh process", {
  timeout: 180_000,
}, () => {
  it.each(crashCases)("kill $point of $tool (recovery by $how)", async ({ tool, point, how }) => {
    const dir = mkdtempSync(join(root, `${tool}-${point}-`));
    const db = join(dir, "cairn.db");
    const b = await bank(dir);
    const common = ["--db", db, "--bank", b.url];

    await startAndKill(common, INPUT, { tool, point }, how);
    const before = appliedBeforeResume(tool, point);
    expect(b.store.applications(KEYS.withdraw), "withdrawals before the resume").toBe(before.withdraw);
    expect(b.store.applications(KEYS.deposit), "deposits before the resume").toBe(before.deposit);

    const resumed = outcome(await child(["resume", ...common, "--how", how]));
    expect(resumed.state, JSON.stringify(resumed.error)).toBe("COMPLETED");
    expect(resumed.output).toEqual(EXPECTED);

    // Exactly once each, whatever the kill: no money lost, none moved twice.
    expect(b.store.applications(KEYS.withdraw)).toBe(1);
    expect(b.store.applications(KEYS.deposit)).toBe(1);
    expect(b.store.ledger()).toHaveLength(2);
    // And each was asked for once: an operation the bank had applied is settled by `/status`, not
    // sent again (the bank would have answered a repeat without moving money, but it was not needed).
    expect(b.requests(KEYS.withdraw), "withdraw requests").toBe(1);
    expect(b.requests(KEYS.deposit), "deposit requests").toBe(1);
    expect(b.store.balances()).toEqual({ alice: 97_500, bob: 52_500, carol: 20_000 });
    expect(b.store.total()).toBe(TOTAL);

    for (const [name, seq] of [
      ["withdraw", 1],
      ["deposit", 2],
    ] as const) {
      const effect = step(resumed, name).effect;
      expect(effect?.id).toBe(`e${seq}`);
      expect(effect?.namespace).toBe(`money_transfer/${name}`);
      expect(effect?.idempotencyKey).toBe(KEYS[name]);
      expect(effect?.status).toBe("applied");
      const answer = EXPECTED[name === "withdraw" ? "withdrawal" : "deposit"];
      expect(effect?.receipt).toEqual({ bankTx: answer.id, balance: answer.balance });
    }
    expect(step(resumed, "withdraw").effect?.compensate).toBe("refund");
    // The bank applied it and the process died before Cairn knew: the status query told.
    if (point === "after-apply") expect(step(resumed, tool).effect?.settledBy).toBe("status");

    // The deposit's result rides with COMPLETED: killed after that commit, the run had ended.
    expect(await transitions(db, resumed.runId)).toEqual(
      tool === "deposit" && point === "after-result" ? STRAIGHT_PATH : RECOVERED_PATH,
    );
  });
});

describe.concurrent("a deposit the bank refuses: the withdrawal is refunded", { timeout: 180_000 }, () => {
  const toClosed = { ...INPUT, to: "carol" };

  const checkCompensated = (b: Bank, o: Outcome) => {
    expect(o.state, JSON.stringify(o.error)).toBe("COMPENSATED");
    // The run keeps the error that made it compensate, after a crash in the compensation too.
    expect(o.error?.code).toBe("TOOL_FAILED");
    expect(o.error?.message).toMatch(/account_closed/);
    expect(b.store.applications(KEYS.withdraw)).toBe(1);
    expect(b.store.applications(KEYS.deposit)).toBe(0);
    expect(b.store.applications(KEYS.refund)).toBe(1);
    expect(b.store.balances()).toEqual({ alice: 100_000, bob: 50_000, carol: 20_000 });
    expect(b.store.total()).toBe(TOTAL);
    const deposit = step(o, "deposit");
    expect(deposit.status).toBe("failed");
    expect(deposit.attempts, "a refusal is not retried").toHaveLength(1);
    expect(deposit.error?.message).toMatch(/account_closed/);
    const refund = step(o, "refund");
    expect(refund.status).toBe("completed");
    expect(refund.effect?.compensates).toBe(step(o, "withdraw").seq);
    expect(refund.effect?.idempotencyKey).toBe(KEYS.refund);
    expect(refund.effect?.status).toBe("applied");
  };

  it("ends COMPENSATED with the balances restored", async () => {
    const dir = mkdtempSync(join(root, "compensate-"));
    const b = await bank(dir);
    const o = outcome(
      await child(["start", "--db", join(dir, "cairn.db"), "--bank", b.url, "--input", JSON.stringify(toClosed)]),
    );
    checkCompensated(b, o);
    expect(await transitions(join(dir, "cairn.db"), o.runId)).toEqual([
      "->PENDING",
      "PENDING>RUNNING",
      "RUNNING>COMPENSATING",
      "COMPENSATING>COMPENSATED",
    ]);
  });

  it.each(POINTS.map((point) => ({ point })))("the refund killed at $point is made once", async ({ point }) => {
    const dir = mkdtempSync(join(root, `refund-${point}-`));
    const db = join(dir, "cairn.db");
    const b = await bank(dir);
    const common = ["--db", db, "--bank", b.url];
    await startAndKill(common, toClosed, { tool: "refund", point }, "pid");
    const reachedBank = point === "after-apply" || point === "after-result";
    expect(b.store.applications(KEYS.refund), "refunds before the resume").toBe(reachedBank ? 1 : 0);
    const o = outcome(await child(["resume", ...common, "--how", "pid"]));
    checkCompensated(b, o);
    const path = await transitions(db, o.runId);
    expect(path.slice(0, 4)).toEqual([
      "->PENDING",
      "PENDING>RUNNING",
      "RUNNING>COMPENSATING",
      "COMPENSATING>INTERRUPTED",
    ]);
    expect(path.at(-1)).toBe("COMPENSATING>COMPENSATED");
  });
});

describe("without a crash: faults between Cairn and the bank", () => {
  async function runOnce(
    dir: string,
    b: Bank,
    input: object,
    retry = { initialIntervalMs: 50, maximumAttempts: 5, jitter: 0 },
  ) {
    const agent = moneyTransferAgent({ bank: b.url, retry });
    const runtime = new Runtime({
      agents: [agent],
      backend: new SqliteBackend({ path: join(dir, "cairn.db") }),
      logger: silentLogger,
    });
    try {
      const handle = await runtime.run(agent, "transfer", input as typeof INPUT);
      const run = await runtime.waitFor(handle.id, { timeoutMs: 30_000 });
      return { run, steps: (await runtime.history(handle.id)).steps };
    } finally {
      await runtime.shutdown();
    }
  }

  it("an answer lost after the bank applied the withdrawal: the status query says applied, nothing runs twice", async () => {
    const dir = mkdtempSync(join(root, "lost-answer-"));
    const b = await bank(dir);
    b.injectFaults({ failAfterApply: 1, op: "withdraw" });
    const { run, steps } = await runOnce(dir, b, INPUT);
    expect(run.state, JSON.stringify(run.error)).toBe("COMPLETED");
    expect(run.output).toEqual(EXPECTED);
    expect(b.store.applications(KEYS.withdraw)).toBe(1);
    expect(b.requests(KEYS.withdraw), "not sent again once the status query said applied").toBe(1);
    const withdraw = step({ steps }, "withdraw");
    expect(withdraw.effect?.settledBy).toBe("status");
    expect(withdraw.attempts, "the attempt that lost its answer, and no other").toHaveLength(1);
    expect(b.store.total()).toBe(TOTAL);
  });

  it("a request dropped before the bank applied it: not applied, retried with the same key", async () => {
    const dir = mkdtempSync(join(root, "dropped-"));
    const b = await bank(dir);
    b.injectFaults({ failBeforeApply: 1, op: "deposit" });
    const { run, steps } = await runOnce(dir, b, INPUT);
    expect(run.state, JSON.stringify(run.error)).toBe("COMPLETED");
    expect(run.output).toEqual(EXPECTED);
    expect(b.store.applications(KEYS.deposit)).toBe(1);
    expect(b.requests(KEYS.deposit), "the dropped request and its retry").toBe(2);
    const deposit = step({ steps }, "deposit");
    expect(deposit.attempts).toHaveLength(2);
    expect(deposit.effect?.idempotencyKey).toBe(KEYS.deposit);
    expect(b.store.total()).toBe(TOTAL);
  });

  it("a bank that is down: EffectNotAppliedError, retried with the same key once it is back", async () => {
    const dir = mkdtempSync(join(root, "down-"));
    const first = await startBank({ db: join(dir, "bank.db"), seed: SEED });
    const port = Number(new URL(first.url).port);
    await first.close();
    const agent = moneyTransferAgent({
      bank: first.url,
      retry: { initialIntervalMs: 200, backoffCoefficient: 1, maximumAttempts: 50, jitter: 0 },
    });
    const runtime = new Runtime({
      agents: [agent],
      backend: new SqliteBackend({ path: join(dir, "cairn.db") }),
      logger: silentLogger,
    });
    try {
      const handle = await runtime.run(agent, "transfer", INPUT);
      // Wait until an attempt found nobody listening, then bring the bank back on its port.
      for (let i = 0; ; i++) {
        const withdraw = (await runtime.history(handle.id)).steps.find((s) => s.name === "withdraw");
        if (withdraw?.attempts.some((a) => a.error)) break;
        if (i > 400) throw new Error("no failed attempt of withdraw");
        await new Promise((r) => setTimeout(r, 10));
      }
      const back = await bank(dir, { port });
      const run = await runtime.waitFor(handle.id, { timeoutMs: 30_000 });
      expect(run.state, JSON.stringify(run.error)).toBe("COMPLETED");
      expect(run.output).toEqual(EXPECTED);
      const withdraw = step({ steps: (await runtime.history(handle.id)).steps }, "withdraw");
      expect(withdraw.attempts.length).toBeGreaterThanOrEqual(2);
      expect(withdraw.attempts[0]?.error?.name).toBe("EffectNotAppliedError");
      expect(back.store.applications(KEYS.withdraw)).toBe(1);
      expect(back.store.total()).toBe(TOTAL);
    } finally {
      await runtime.shutdown();
    }
  });

  it("insufficient funds: refused at once, nothing moves", async () => {
    const dir = mkdtempSync(join(root, "funds-"));
    const b = await bank(dir);
    const { run, steps } = await runOnce(dir, b, { ...INPUT, amount: 1_000_000 });
    // Nothing was applied, so nothing to undo: the run fails without compensating.
    expect(run.state).toBe("FAILED");
    expect(run.error?.message).toMatch(/insufficient_funds/);
    const withdraw = step({ steps }, "withdraw");
    expect(withdraw.attempts, "a refusal is not retried").toHaveLength(1);
    expect(steps.some((s) => s.name === "deposit" || s.name === "refund")).toBe(false);
    expect(b.store.ledger()).toEqual([]);
    expect(b.store.total()).toBe(TOTAL);
  });

  // A tool that says its effect did not happen (EffectRefusedError) leaves it recorded not_applied.
  it("a refused effect is recorded not_applied", async () => {
    const dir = mkdtempSync(join(root, "refused-status-"));
    const b = await bank(dir);
    const { run, steps } = await runOnce(dir, b, { ...INPUT, amount: 1_000_000 });
    expect(run.state).toBe("FAILED");
    expect(step({ steps }, "withdraw").effect?.status).toBe("not_applied");
  });
});

describe.concurrent("the naive bank: an unknown outcome waits for an operator", { timeout: 180_000 }, () => {
  async function naiveKilled(name: string, kill: { tool: string; point: string }) {
    const dir = mkdtempSync(join(root, `naive-${name}-`));
    const db = join(dir, "cairn.db");
    const b = await bank(dir, { naive: true });
    const common = ["--db", db, "--bank", b.url, "--naive"];
    await startAndKill(common, INPUT, kill, "pid");
    const stuck = outcome(await child(["resume", ...common, "--how", "pid"]));
    expect(stuck.state, JSON.stringify(stuck.error)).toBe("NEEDS_RECONCILIATION");
    // The run's error names the effect and the command that settles it.
    const effectId = kill.tool === "withdraw" ? "e1" : "e2";
    expect(stuck.error?.code).toBe("EFFECT_UNRESOLVED");
    expect(stuck.error?.message).toContain(`cairn reconcile ${stuck.runId} ${effectId}`);
    return { dir, db, b, common, stuck };
  }

  /** A runtime in this process that drives the run after `reconcile`. */
  function operatorRuntime(db: string, b: Bank): Runtime {
    const agent = moneyTransferAgent({ bank: b.url, naive: true, retry: { initialIntervalMs: 50, jitter: 0 } });
    return new Runtime({
      agents: [agent],
      backend: new SqliteBackend({ path: db }),
      logger: silentLogger,
      worker: { leaseMs: 1000, pollIntervalMs: 50 },
    });
  }

  /** The bank's answer for the one application of `key`, from its ledger. */
  function fromLedger(b: Bank, key: string): Applied {
    const [entry, ...more] = b.store.ledger(key);
    expect(more).toEqual([]);
    if (!entry) throw new Error(`no ledger entry for ${key}`);
    return {
      id: `tx_${entry.id}`,
      kind: entry.kind,
      account: entry.account,
      amount: entry.amount,
      balance: entry.balance,
      key,
    };
  }

  it("applied: killed after the bank withdrew; never replayed; reconcile applied → COMPLETED, one withdrawal", async () => {
    const { db, b, stuck } = await naiveKilled("applied", { tool: "withdraw", point: "after-apply" });
    // Not silently run again: the ledger has the one withdrawal the dead process made.
    expect(b.store.applications(NAIVE_KEYS.withdraw)).toBe(1);
    expect(b.store.applications(NAIVE_KEYS.deposit)).toBe(0);
    const withdraw = step(stuck, "withdraw");
    expect(withdraw.effect?.status).toBe("unknown");
    expect(withdraw.effect?.id).toBe("e1");

    const runtime = operatorRuntime(db, b);
    try {
      await runtime.start();
      const result = fromLedger(b, NAIVE_KEYS.withdraw);
      await runtime.reconcile(stuck.runId, "e1", { outcome: "applied", result, by: "ops-ana" });
      const done = await runtime.waitFor(stuck.runId, { timeoutMs: 30_000 });
      expect(done.state, JSON.stringify(done.error)).toBe("COMPLETED");
      expect((done.output as unknown as TransferOutput).withdrawal).toEqual(result);
      expect(b.store.applications(NAIVE_KEYS.withdraw), "no second withdrawal").toBe(1);
      expect(b.store.applications(NAIVE_KEYS.deposit)).toBe(1);
      expect(b.store.total()).toBe(TOTAL);
      const effect = step((await runtime.history(stuck.runId)) as { steps: StepRecord[] }, "withdraw").effect;
      expect(effect?.status).toBe("applied");
      expect(effect?.settledBy).toBe("reconcile");
      expect(effect?.reconciliation?.outcome).toBe("applied");
      const path = await transitions(db, stuck.runId);
      expect(path.slice(-4)).toEqual([
        "RUNNING>NEEDS_RECONCILIATION",
        "NEEDS_RECONCILIATION>RECONCILING",
        "RECONCILING>RUNNING",
        "RUNNING>COMPLETED",
      ]);
    } finally {
      await runtime.shutdown();
    }
  });

  it("not applied: killed before the call; reconcile not_applied → the tool runs again → COMPLETED", async () => {
    const { db, b, stuck } = await naiveKilled("not-applied", { tool: "withdraw", point: "after-intent" });
    expect(b.store.ledger()).toEqual([]);
    const runtime = operatorRuntime(db, b);
    try {
      await runtime.start();
      await runtime.reconcile(stuck.runId, "e1", { outcome: "not_applied", by: "ops-ana" });
      const done = await runtime.waitFor(stuck.runId, { timeoutMs: 30_000 });
      expect(done.state, JSON.stringify(done.error)).toBe("COMPLETED");
      expect(b.store.applications(NAIVE_KEYS.withdraw)).toBe(1);
      expect(b.store.applications(NAIVE_KEYS.deposit)).toBe(1);
      expect(b.store.balances()).toEqual({ alice: 97_500, bob: 52_500, carol: 20_000 });
      const withdraw = step((await runtime.history(stuck.runId)) as { steps: StepRecord[] }, "withdraw");
      expect(withdraw.effect?.status).toBe("applied");
      expect(withdraw.attempts.length, "the interrupted attempt and the one after the decision").toBe(2);
    } finally {
      await runtime.shutdown();
    }
  });

  it("from the CLI: cairn reconcile … --outcome applied --result, then a worker finishes it", async () => {
    const { db, b, common, stuck } = await naiveKilled("cli", { tool: "deposit", point: "after-apply" });
    expect(b.store.applications(NAIVE_KEYS.withdraw)).toBe(1);
    expect(b.store.applications(NAIVE_KEYS.deposit)).toBe(1);
    const result = fromLedger(b, NAIVE_KEYS.deposit);
    const cli = await cairn([
      "reconcile",
      stuck.runId,
      "e2",
      "--outcome",
      "applied",
      "--result",
      JSON.stringify(result),
      "--by",
      "ops-ana",
      "--db",
      db,
    ]);
    expect(cli.code, cli.stderr).toBe(0);
    const done = outcome(await child(["resume", ...common, "--how", "pid"]));
    expect(done.state, JSON.stringify(done.error)).toBe("COMPLETED");
    expect((done.output as unknown as TransferOutput).deposit).toEqual(result);
    expect(b.store.applications(NAIVE_KEYS.deposit), "no second deposit").toBe(1);
    expect(b.store.total()).toBe(TOTAL);
    expect((await transitions(db, stuck.runId)).slice(-4)).toEqual([
      "RUNNING>NEEDS_RECONCILIATION",
      "NEEDS_RECONCILIATION>RECONCILING",
      "RECONCILING>RUNNING",
      "RUNNING>COMPLETED",
    ]);
  });
});

describe("the example from the CLI", { timeout: 120_000 }, () => {
  it("cairn run … money_transfer transfer against BANK_URL", async () => {
    const dir = mkdtempSync(join(root, "cli-run-"));
    const b = await bank(dir);
    const db = join(dir, "cairn.db");
    const res = await cairn(
      [
        "run",
        "examples/money-transfer/transfer.ts",
        "money_transfer",
        "transfer",
        "--input",
        JSON.stringify(INPUT),
        "--db",
        db,
      ],
      { BANK_URL: b.url },
    );
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain("RUNNING → COMPLETED");
    expect(b.store.balances()).toEqual({ alice: 97_500, bob: 52_500, carol: 20_000 });
  });

  it("without BANK_URL it starts a bank of its own on BANK_DB, and the process still ends", async () => {
    const dir = mkdtempSync(join(root, "cli-own-"));
    const res = await cairn(
      [
        "run",
        "examples/money-transfer/transfer.ts",
        "money_transfer",
        "transfer",
        "--input",
        JSON.stringify(INPUT),
        "--db",
        join(dir, "cairn.db"),
      ],
      { BANK_DB: join(dir, "bank.db"), BANK_URL: "" },
    );
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toMatch(/bank: started in this process at http:\/\/127\.0\.0\.1:\d+/);
    const { BankStore } = await import("../examples/money-transfer/bank.ts");
    const store = new BankStore(join(dir, "bank.db"));
    try {
      expect(store.balances()).toEqual({ alice: 97_500, bob: 52_500, carol: 20_000 });
      expect(store.applications(KEYS.withdraw)).toBe(1);
    } finally {
      store.close();
    }
  });
});
