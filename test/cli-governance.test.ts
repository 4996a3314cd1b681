import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import type { StepRecord } from "../src/core/records.ts";
import type { RunContract } from "../src/core/run-contract.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { cairn } from "./helpers/cli.ts";
import { startTestDatabase, type TestDatabase } from "./helpers/postgres.ts";

/**
 * `cairn export`, `accept`, `reject`, `cost` and `reconcile`, run as a user runs them: real
 * processes on a real SQLite file.
 */
const dir = mkdtempSync(join(tmpdir(), "cairn-cli-governance-"));
const db = join(dir, "runs.db");
const example = "examples/report-builder.ts";
/** Each `cairn` process takes a second or more (tsx compiles on start): room for a slow machine. */
const LONG = { timeout: 120_000 };

function runIdOf(stdout: string): string {
  const id = /^run (run_\w+)/m.exec(stdout)?.[1];
  if (!id) throw new Error(`no run id in:\n${stdout}`);
  return id;
}

async function completedRun(quarter: string, database = db): Promise<string> {
  const r = await cairn([
    "run",
    example,
    "report_builder",
    "build",
    "--input",
    JSON.stringify({ quarter }),
    "--db",
    database,
  ]);
  expect(r.code, r.stderr).toBe(0);
  return runIdOf(r.stdout);
}

async function exported(runId: string, ...more: string[]): Promise<RunContract> {
  const r = await cairn(["export", runId, "--db", db, ...more]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as RunContract;
}

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("cairn export", LONG, () => {
  let runId = "";
  beforeAll(async () => {
    runId = await completedRun("2026-Q3");
  });

  it("prints the contract of a completed run as JSON, with the run's whole transition log", async () => {
    const contract = await exported(runId);
    expect(Object.keys(contract)).toEqual([
      "contract",
      "job",
      "run",
      "checkpoint",
      "retries",
      "retryAndTimeout",
      "effects",
      "waits",
      "signals",
      "approvals",
      "isolation",
      "recovery",
      "completion",
      "usage",
      "journal",
    ]);
    expect(contract.contract.version).toBe("cairn.run-contract/1");
    const backend = new SqliteBackend({ path: db });
    await backend.init();
    try {
      const transitions = await backend.listTransitions(runId);
      expect(transitions).toHaveLength(3);
      expect(contract.run.transitions).toEqual(
        transitions.map((t) => ({
          id: t.id,
          at: new Date(t.at).toISOString(),
          actor: t.actor,
          from: t.from,
          to: t.to,
          contractState: t.to === "PENDING" ? "admitted" : t.to.toLowerCase(),
          pausedReason: t.pausedReason,
          reason: t.reason,
          versions: t.versions,
        })),
      );
    } finally {
      await backend.close();
    }
    expect(contract.run).toMatchObject({
      id: runId,
      agent: "report_builder",
      state: "COMPLETED",
      contractState: "completed",
    });
    expect(contract.checkpoint).toMatchObject({
      store: { backend: "sqlite", location: db },
      lastCommittedTransition: { id: 3, to: "COMPLETED" },
      lastCompletedStep: 2,
    });
    expect(contract.completion).toMatchObject({ state: "COMPLETED", acceptance: null, unresolved: [], delivery: null });
    expect((contract.completion.output as { quarter: string }).quarter).toBe("2026-Q3");
    expect(contract.journal.steps.map((s: StepRecord) => s.name)).toEqual(["fetch_data", "summarize"]);
    expect(contract.job).toEqual({ jobId: null, objective: null, acceptanceRule: null, owner: null, authority: null });
    expect(contract.usage).toMatchObject({ toolCalls: 2, steps: 2, modelCalls: 1 });
    // Without the agent's code the retry rules are not known; they are null, not guessed.
    expect(contract.retries.map((r) => [r.tool, r.policy])).toEqual([
      ["fetch_data", null],
      ["summarize", null],
    ]);
  });

  it("prints the same contract as YAML with --yaml", async () => {
    const json = await exported(runId);
    const r = await cairn(["export", runId, "--yaml", "--db", db]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.trimStart().startsWith("{")).toBe(false);
    expect(r.stdout).toMatch(/^contract:\n {2}version: cairn.run-contract\/1$/m);
    expect(r.stdout).not.toMatch(/[&*]a\d/); // no YAML anchors or aliases
    const yaml = parseYaml(r.stdout) as RunContract;
    const { contract: _a, ...fromYaml } = yaml;
    const { contract: _b, ...fromJson } = json;
    expect(fromYaml).toEqual(fromJson);
    expect(yaml.run.transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "COMPLETED"]);
  });

  it("gives each tool's retry policy with --module", async () => {
    const contract = await exported(runId, "--module", example);
    expect(contract.retries.map((r) => [r.tool, r.policy?.maximumAttempts])).toEqual([
      ["fetch_data", 5],
      ["summarize", 5],
    ]);
  });

  it("exits 1 for an unknown run, and 2 without a run id", async () => {
    const unknown = await cairn(["export", "run_nope", "--db", db]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: \[RUN_NOT_FOUND\] no run with id "run_nope"/);
    expect(unknown.stdout).toBe("");
    const missing = await cairn(["export", "--db", db]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: missing <runId>/);
  });
});

describe("cairn accept and reject", LONG, () => {
  it("accepts a completed run once; a second verdict is refused with ALREADY_DECIDED", async () => {
    const runId = await completedRun("2026-Q1");
    const accepted = await cairn(["accept", runId, "--by", "ann", "--note", "figures checked", "--db", db]);
    expect(accepted.stderr).toBe("");
    expect(accepted.code).toBe(0);
    expect(accepted.stdout).toContain(`accepted run ${runId} (report_builder/build) as user ann: figures checked`);

    const contract = await exported(runId);
    expect(contract.completion.acceptance).toMatchObject({
      decision: "accepted",
      by: { kind: "user", id: "ann" },
      note: "figures checked",
    });
    // The verdict is not a transition: the run is COMPLETED as before, with the same log.
    expect(contract.run.state).toBe("COMPLETED");
    expect(contract.run.transitions).toHaveLength(3);

    const again = await cairn(["accept", runId, "--by", "bob", "--db", db]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /^error: \[ALREADY_DECIDED\] cannot accept run \S+: it was already accepted by user ann/,
    );
    const reject = await cairn(["reject", runId, "--db", db]);
    expect(reject.code).toBe(1);
    expect(reject.stderr).toContain("[ALREADY_DECIDED]");
    expect((await exported(runId)).completion.acceptance?.by.id).toBe("ann");
  });

  it("refuses to reject a run that did not complete (RUN_NOT_COMPLETED)", async () => {
    const failed = await cairn([
      "run",
      example,
      "report_builder",
      "build",
      "--input",
      '{"quarter":"soon"}',
      "--db",
      db,
    ]);
    expect(failed.code).toBe(1);
    const runId = runIdOf(failed.stdout);
    const r = await cairn(["reject", runId, "--by", "ann", "--db", db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: \[RUN_NOT_COMPLETED\] cannot reject run \S+: it is FAILED/);
    expect((await exported(runId)).completion.acceptance).toBeNull();
  });

  it("rejects a completed run, recording who and why (by default: local)", async () => {
    const runId = await completedRun("2026-Q2");
    const r = await cairn(["reject", runId, "--note", "wrong quarter", "--db", db]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`rejected run ${runId} (report_builder/build) as user local: wrong quarter`);
    expect((await exported(runId)).completion.acceptance).toMatchObject({
      decision: "rejected",
      by: { kind: "user", id: "local" },
      note: "wrong quarter",
    });
  });

  it("refuses an empty --by and a missing run id with exit code 2", async () => {
    const emptyBy = await cairn(["accept", "run_x", "--by", "", "--db", db]);
    expect(emptyBy.code).toBe(2);
    expect(emptyBy.stderr).toMatch(/^error: --by needs a name/);
    const missing = await cairn(["reject", "--db", db]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^error: missing <runId>/);
  });
});

describe("cairn cost", LONG, () => {
  const costDb = join(dir, "cost.db");
  const ids: Record<string, string> = {};

  /** Runs of two made-up agents with known step costs, stored directly: 0.10 + 0.20 + 0.05 + 0.15 + 1.00. */
  beforeAll(async () => {
    const backend = new SqliteBackend({ path: costDb });
    await backend.init();
    const versions = { workflow: "1", policy: null, runtime: "0.1.0" };
    const worker = { kind: "worker" as const, id: "w" };
    const seed = async (name: string, agent: string, costUsd: number, end: "COMPLETED" | "FAILED") => {
      const at = Date.now();
      const { run } = await backend.createRun({
        id: `run_${name}`,
        agent,
        workflow: "quote",
        key: null,
        input: null,
        versions,
        meta: {},
        actor: { kind: "user", id: "local" },
        reason: "started",
        at,
      });
      const claimed = await backend.claimRun({ workerId: "w", now: at, leaseMs: 60_000, runId: run.id });
      const epoch = claimed?.epoch ?? 0;
      await backend.transition({
        runId: run.id,
        from: "PENDING",
        to: "RUNNING",
        actor: worker,
        reason: "claimed",
        versions,
        at,
        fence: { epoch },
      });
      const step: StepRecord = {
        runId: run.id,
        seq: 1,
        kind: "tool",
        name: "price",
        status: "completed",
        argsDigest: "",
        args: null,
        result: null,
        error: undefined,
        attempts: [{ attempt: 1, startedAt: at, endedAt: at }],
        heartbeat: undefined,
        usage: { inputTokens: 1000, outputTokens: 200, modelCalls: 1, costUsd },
        startedAt: at,
        endedAt: at,
        epoch,
      };
      await backend.saveSteps([step], { epoch, sync: true });
      await backend.transition({
        runId: run.id,
        from: "RUNNING",
        to: end,
        actor: worker,
        reason: end === "COMPLETED" ? "workflow returned" : "tool failed",
        versions,
        at,
        fence: { epoch },
        ...(end === "COMPLETED" ? { patch: { output: { ok: true } } } : {}),
      });
      ids[name] = run.id;
    };
    try {
      await seed("a", "quotes", 0.1, "COMPLETED");
      await seed("b", "quotes", 0.2, "COMPLETED");
      await seed("c", "quotes", 0.05, "FAILED");
      await seed("d", "quotes", 0.15, "COMPLETED");
      await seed("e", "forecasts", 1, "COMPLETED");
    } finally {
      await backend.close();
    }
  });

  it("says that no run was accepted yet instead of dividing by zero", async () => {
    const r = await cairn(["cost", "--db", costDb]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("cost of 5 runs in");
    expect(r.stdout).toMatch(/cost per accepted job = \$1\.5000 total \/ 0 accepted: none accepted yet/);
  });

  it("divides the cost of all runs, failed and rejected ones included, by the accepted runs", async () => {
    expect((await cairn(["accept", ids.a ?? "", "--db", costDb])).code).toBe(0);
    expect((await cairn(["accept", ids.b ?? "", "--db", costDb])).code).toBe(0);
    expect((await cairn(["reject", ids.d ?? "", "--db", costDb])).code).toBe(0);
    const r = await cairn(["cost", "--db", costDb]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("cost per accepted job = $1.5000 total / 2 accepted = $0.7500");
    const lines = r.stdout.split("\n");
    const header = lines.find((l) => l.includes("AGENT/WORKFLOW")) ?? "";
    expect(header).toMatch(
      /RUNS\s+COST USD\s+TOKENS IN\/OUT\s+ACCEPTED\s+REJECTED\s+UNREVIEWED\s+PER ACCEPTED\s+STATES/,
    );
    // Most expensive first; "all" totals the groups.
    expect(lines.find((l) => l.includes("forecasts/quote"))).toMatch(
      /forecasts\/quote\s+1\s+1\.0000\s+1000\/200\s+0\s+0\s+1\s+—\s+COMPLETED 1/,
    );
    expect(lines.find((l) => l.includes("quotes/quote"))).toMatch(
      /quotes\/quote\s+4\s+0\.5000\s+4000\/800\s+2\s+1\s+0\s+0\.2500\s+COMPLETED 3, FAILED 1/,
    );
    expect(lines.find((l) => /^\s+all\s/.test(l))).toMatch(/all\s+5\s+1\.5000\s+5000\/1000\s+2\s+1\s+1\s+0\.7500/);
  });

  it("filters by --agent and --workflow", async () => {
    const quotes = await cairn(["cost", "--agent", "quotes", "--db", costDb]);
    expect(quotes.code, quotes.stderr).toBe(0);
    expect(quotes.stdout).toContain("cost of 4 runs of agent quotes");
    expect(quotes.stdout).not.toContain("forecasts");
    expect(quotes.stdout).toContain("cost per accepted job = $0.5000 total / 2 accepted = $0.2500");
    const none = await cairn(["cost", "--agent", "quotes", "--workflow", "other", "--db", costDb]);
    expect(none.code).toBe(0);
    expect(none.stdout).toMatch(/^no runs of agent quotes, workflow other in /);
  });

  it("refuses an unknown option with exit code 2", async () => {
    const r = await cairn(["cost", "--state", "FAILED", "--db", costDb]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: unknown option --state for `cairn cost`/);
  });
});

describe("cairn reconcile: bad input", LONG, () => {
  it("needs --outcome, names it and how to give it", async () => {
    const r = await cairn(["reconcile", "run_x", "e1", "--db", db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: --outcome is required: --outcome applied .* --outcome not_applied/);
  });

  it("refuses an outcome that is neither applied nor not_applied", async () => {
    const r = await cairn(["reconcile", "run_x", "e1", "--outcome", "done", "--db", db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(
      /^error: --outcome "done" is not an outcome; use --outcome applied .* or --outcome not_applied/,
    );
  });

  it("refuses --result and --receipt that are not JSON, naming the option", async () => {
    const result = await cairn(["reconcile", "run_x", "e1", "--outcome", "applied", "--result", "{id:", "--db", db]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^error: --result is not valid JSON .*quote it for the shell, e\.g\. --result '/);
    const receipt = await cairn(["reconcile", "run_x", "e1", "--outcome", "applied", "--receipt", "TX-1", "--db", db]);
    expect(receipt.code).toBe(2);
    expect(receipt.stderr).toMatch(/^error: --receipt is not valid JSON/);
  });

  it("refuses a result for an effect said not to have happened", async () => {
    const r = await cairn(["reconcile", "run_x", "e1", "--outcome", "not_applied", "--receipt", "{}", "--db", db]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error: --receipt goes with --outcome applied/);
  });
});

describe("cairn reconcile", LONG, () => {
  it("settles an effect of unknown outcome as applied; the resumed run completes without running it again", async () => {
    const started = await cairn([
      "run",
      "test/fixtures/effect-agent.ts",
      "ledger",
      "post",
      "--input",
      '{"amount":42}',
      "--db",
      db,
    ]);
    expect(started.code).toBe(1);
    expect(started.stdout).toContain("RUNNING → NEEDS_RECONCILIATION");
    const runId = runIdOf(started.stdout);
    const before = await exported(runId);
    expect(before.run.contractState).toBe("needs_reconciliation");
    expect(before.effects.map((e) => [e.id, e.status, e.attempts.count])).toEqual([["e1", "unknown", 1]]);
    expect(before.completion.unresolved).toMatchObject([{ kind: "effect", id: "e1", seq: 1 }]);
    const listed = await cairn(["runs", "--db", db]);
    expect(listed.stdout).toContain(`↳ effect e1 (transfer, key ledger/transfer:`);
    expect(listed.stdout).toContain(`cairn reconcile ${runId} e1 --outcome applied|not_applied`);

    const r = await cairn([
      "reconcile",
      runId,
      "e1",
      "--outcome",
      "applied",
      "--result",
      '{"transferId":"T-9"}',
      "--receipt",
      '{"bankRef":"TX-81"}',
      "--by",
      "ann",
      "--note",
      "on the bank statement",
      "--db",
      db,
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`reconciled effect e1 of run ${runId} as applied by user ann`);
    expect(r.stdout).toMatch(/NEEDS_RECONCILIATION → RECONCILING\s+user ann/);

    const resumed = await cairn(["resume", runId, "--db", db]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toContain('"transferId": "T-9"');
    // A reconciled run waits for a worker's claim: no lost worker is reported.
    expect(resumed.stdout).not.toContain("INTERRUPTED");
    expect(resumed.stdout).toMatch(/RECONCILING → RUNNING/);

    const after = await exported(runId);
    expect(after.run.state).toBe("COMPLETED");
    expect(after.effects[0]).toMatchObject({
      status: "applied",
      receipt: { bankRef: "TX-81" },
      settledBy: "reconcile",
      reconciliation: { outcome: "applied", by: { kind: "user", id: "ann" }, note: "on the bank statement" },
      attempts: { count: 1 },
    });
    expect(after.completion.receipts).toEqual([
      { effectId: "e1", seq: 1, tool: "transfer", status: "applied", receipt: { bankRef: "TX-81" } },
    ]);
    expect(after.completion.unresolved).toEqual([]);

    const again = await cairn(["reconcile", runId, "e1", "--outcome", "not_applied", "--db", db]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^error: \[EFFECT_NOT_FOUND\] effect e1 of run \S+ is applied/);
  });
});

describe("on PostgreSQL (--database-url)", LONG, () => {
  let pg: TestDatabase | undefined;
  afterAll(async () => {
    await pg?.close();
  });

  it("exports, accepts and costs runs the same way", async () => {
    pg = await startTestDatabase();
    const url = pg.url;
    const started = await cairn([
      "run",
      example,
      "report_builder",
      "build",
      "--input",
      '{"quarter":"2026-Q4"}',
      "--database-url",
      url,
    ]);
    expect(started.code, started.stderr).toBe(0);
    const runId = runIdOf(started.stdout);
    const accepted = await cairn(["accept", runId, "--by", "ann", "--database-url", url]);
    expect(accepted.code, accepted.stderr).toBe(0);
    const again = await cairn(["reject", runId, "--database-url", url]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("[ALREADY_DECIDED]");

    const r = await cairn(["export", runId, "--yaml", "--database-url", url]);
    expect(r.code, r.stderr).toBe(0);
    const contract = parseYaml(r.stdout) as RunContract;
    expect(contract.checkpoint.store).toEqual({ backend: "postgres", location: "schema cairn" });
    expect(contract.run.transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "COMPLETED"]);
    expect(contract.completion.acceptance).toMatchObject({ decision: "accepted", by: { id: "ann" } });
    // The password of the URL is never part of the export.
    expect(r.stdout).not.toContain(new URL(url).password || "\u0000");

    const cost = await cairn(["cost", "--database-url", url]);
    expect(cost.code, cost.stderr).toBe(0);
    expect(cost.stdout).toContain("cost per accepted job = $0.0000 total / 1 accepted = $0.0000");
  });
});
