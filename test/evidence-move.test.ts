import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresBackend } from "../src/backend/postgres/postgres-backend.ts";
import { SqliteBackend } from "../src/backend/sqlite/sqlite-backend.ts";
import { RunNotResumableError } from "../src/core/errors.ts";
import { silentLogger } from "../src/core/logger.ts";
import type { TransitionRecord } from "../src/core/records.ts";
import type { RunContract } from "../src/core/run-contract.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { payouts } from "./fixtures/move-agent.ts";
import { cairn } from "./helpers/cli.ts";
import { startTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { untilState } from "./helpers/runtime-helpers.ts";

/**
 * Evidence test six of the seed ("export the run and continue it on another route"): a run paused
 * for approval on SQLite is moved with `cairn export --move`, imported into PostgreSQL with
 * `cairn import`, approved there and finished by a PostgreSQL worker. Its tool steps are not run
 * again and its effect is applied once; the SQLite copy refuses to continue; the PostgreSQL
 * transition log is the SQLite one (up to the move) plus what happened after, without a gap.
 */
let db: TestDatabase;
let dir: string;

beforeAll(async () => {
  db = await startTestDatabase();
  dir = mkdtempSync(join(tmpdir(), "cairn-move-"));
}, 120_000);

afterAll(async () => {
  await db?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function logLines(file: string): string[] {
  try {
    return readFileSync(file, "utf8").trim().split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

/** What a transition says, without its run (the same on both stores). */
function shape(t: TransitionRecord) {
  return { id: t.id, at: t.at, actor: t.actor, from: t.from, to: t.to, reason: t.reason, versions: t.versions };
}

describe("moving a paused run from SQLite to PostgreSQL (evidence test six)", () => {
  it("continues it on PostgreSQL once, and the SQLite copy refuses to go on", async () => {
    const log = join(dir, "tools.log");
    process.env.MOVE_LOG = log;
    const path = join(dir, "source.db");
    const schema = db.schema("move");
    const env = { MOVE_LOG: log };

    // 1. On SQLite: the run quotes, then pauses for alice's approval.
    const source = new Runtime({ agents: [payouts], backend: new SqliteBackend({ path }), logger: silentLogger });
    await source.start();
    const handle = await source.run("payouts", "settle", { amount: 41 }, { key: "invoice-7" });
    await untilState(source.backend, handle.id, "PAUSED");
    await source.shutdown();
    expect(logLines(log)).toEqual(["quote"]);
    const inspect = new SqliteBackend({ path });
    await inspect.init();
    const before = await inspect.listTransitions(handle.id);
    expect(before.at(-1)?.to).toBe("PAUSED");

    // 2. A user moves it: the contract goes to a file, the SQLite copy ends MOVED.
    const file = join(dir, "run.json");
    const moved = await cairn(
      ["export", handle.id, "--move", "--to", "postgres (test)", "--out", file, "--db", path],
      env,
    );
    expect(moved.stderr).toContain("is MOVED here");
    expect(moved.code).toBe(0);
    const contract = JSON.parse(readFileSync(file, "utf8")) as RunContract;
    expect(contract.run.state).toBe("PAUSED");
    expect((await inspect.getRun(handle.id))?.state).toBe("MOVED");
    const shown = await cairn(["show", handle.id, "--db", path], env);
    expect(shown.stdout).toMatch(/moved to\s+postgres \(test\) \(contract\s+sha256:/);
    expect(shown.stdout).toMatch(/PAUSED → MOVED/);

    // 3. An altered contract is refused, naming the field; the real one is imported (twice: a no-op).
    const altered = join(dir, "altered.json");
    writeFileSync(altered, JSON.stringify({ ...contract, run: { ...contract.run, input: { amount: 4100 } } }));
    const pgArgs = ["--database-url", db.url, "--schema", schema];
    const refused = await cairn(["import", altered, ...pgArgs], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("field run.input changed");
    const imported = await cairn(["import", file, ...pgArgs], env);
    expect(imported.stderr).toBe("");
    expect(imported.stdout).toContain(`imported run ${handle.id}`);
    const again = await cairn(["import", file, ...pgArgs], env);
    expect(again.stdout).toContain("nothing changed");

    // 4. The SQLite copy refuses to continue: no resume, no approval, no worker takes it.
    const stale = new Runtime({ agents: [payouts], backend: new SqliteBackend({ path }), logger: silentLogger });
    await stale.start();
    await expect(stale.resume(handle.id)).rejects.toBeInstanceOf(RunNotResumableError);
    const waitId = contract.approvals[0]?.id as string;
    const digest = contract.approvals[0]?.digest as string;
    await expect(stale.approve(handle.id, waitId, { by: "alice", digest })).rejects.toThrow(
      /is MOVED; its waits are closed/,
    );
    await stale.shutdown();
    expect((await inspect.getRun(handle.id))?.state).toBe("MOVED");

    // 5. On PostgreSQL: alice approves, a PostgreSQL worker finishes the run.
    const target = new Runtime({
      agents: [payouts],
      backend: new PostgresBackend({ connectionString: db.url, schema }),
      logger: silentLogger,
    });
    await target.start();
    try {
      await target.approve(handle.id, waitId, { by: "alice", digest });
      const output = await handleOn(target, handle.id).result();
      expect(output).toEqual({ quote: { amount: 41, fee: 1 }, paid: { paid: 42 } });
      // The quote ran once, on SQLite; the payment once, on PostgreSQL.
      expect(logLines(log)).toEqual(["quote", `pay payouts/pay:${handle.id}:3`]);
      const after = await target.backend.listTransitions(handle.id);
      expect(after.map((t) => t.id)).toEqual(after.map((_, i) => i + 1));
      expect(after.slice(0, before.length).map(shape)).toEqual(before.map(shape));
      expect(after.slice(before.length).map((t) => t.to)).toEqual(["RESUMING", "RUNNING", "COMPLETED"]);
      const steps = await target.backend.loadSteps(handle.id);
      expect(steps.find((s) => s.name === "pay")?.effect?.status).toBe("applied");
    } finally {
      await target.shutdown();
      await inspect.close();
    }
  }, 120_000);
});

function handleOn(runtime: Runtime, runId: string) {
  return {
    result: async () => {
      const run = await runtime.waitFor(runId, { timeoutMs: 60_000 });
      if (run.state !== "COMPLETED") throw new Error(`run ${runId} ended ${run.state}: ${run.error?.message}`);
      return run.output;
    },
  };
}
