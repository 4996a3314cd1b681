import { randomUUID } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { StorageError } from "../../core/errors.ts";
import type { AcceptanceRecord, RunRecord, StepRecord } from "../../core/records.ts";
import { effectRecord, fullStep, LEASE_MS, move, runInput, T0, USER } from "../conformance/conformance-fixtures.ts";
import { encodeStep } from "../rows/step-rows.ts";
import { transitionParams } from "../rows/transition-rows.ts";
import { pendingRun } from "../rules/run-rules.ts";
import { SqliteBackend, type SqliteBackendOptions } from "./sqlite-backend.ts";
import { stepParams } from "./sqlite-journal.ts";
import { MIGRATION_V2, MIGRATION_V3, SCHEMA_V1, SCHEMA_VERSION } from "./sqlite-migrations.ts";
import { prepareStatements } from "./sqlite-statements.ts";

/** The schema of `SqliteBackend`: its version, and the upgrade in place of files of older versions. */

const tmpRoot = join(tmpdir(), "cairn-sqlite-schema-tests");

function tempPath(): string {
  return join(tmpRoot, randomUUID(), "cairn.db");
}

/** Removes the per-test directory under `tmpRoot` that holds `path` (and its -wal, -shm files). */
function removeDatabase(path: string): void {
  const top = relative(tmpRoot, path).split(sep)[0];
  if (top && top !== "..") rmSync(join(tmpRoot, top), { recursive: true, force: true });
}

/** A new file at `path` holding the DDL of the schema versions given, recorded as the last of them. */
function oldFile(path: string, ddl: readonly string[], version: number): Database.Database {
  mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  for (const sql of ddl) db.exec(sql);
  db.prepare("INSERT INTO cairn_meta (key, value) VALUES ('schema_version', ?)").run(String(version));
  return db;
}

function schemaVersionOf(path: string): unknown {
  const raw = new Database(path, { readonly: true });
  try {
    return raw.prepare("SELECT value FROM cairn_meta WHERE key = 'schema_version'").pluck().get();
  } finally {
    raw.close();
  }
}

describe("SqliteBackend schema", () => {
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

  it("uses WAL, foreign keys and records schema version 8", async () => {
    expect(SCHEMA_VERSION).toBe(8);
    const backend = await open();
    const raw = new Database(backend.path, { readonly: true });
    try {
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(raw.prepare("SELECT value FROM cairn_meta WHERE key = 'schema_version'").pluck().get()).toBe("8");
      const columns = (table: string) => raw.prepare(`SELECT name FROM pragma_table_info('${table}')`).pluck().all();
      expect(columns("steps")).toContain("effect");
      expect(columns("runs")).toEqual(expect.arrayContaining(["usage", "acceptance"]));
      expect(columns("transitions")).toContain("feed_position");
      // Version 5: the sweep of child waits reads the open child waits from their own index.
      const sweep = prepareStatements(raw).endedChildWaitRuns.source;
      const plan = raw.prepare<[number], { detail: string }>(`EXPLAIN QUERY PLAN ${sweep}`).all(10);
      expect(plan.map((row) => row.detail).join("\n")).toMatch(
        /SCAN w USING (COVERING )?INDEX waits_open_child\nSEARCH c USING INDEX sqlite_autoindex_runs_1 \(id=\?\)/,
      );
    } finally {
      raw.close();
    }
  });

  it("migrates a version 1 file to the current version, keeping its runs", async () => {
    const path = tempPath();
    paths.push(path);
    const v1 = oldFile(path, [SCHEMA_V1], 1);
    const { run, transition } = pendingRun(runInput({ key: "k" }));
    v1.prepare(
      `INSERT INTO runs (id, agent, workflow, run_key, state, paused_reason, input, output, error, epoch, lease_owner,
         lease_expires_at, recoveries, last_transition_id, versions, meta, created_at, updated_at)
       VALUES (?, ?, ?, ?, 'PENDING', NULL, ?, NULL, NULL, 0, NULL, NULL, 0, 1, ?, ?, ?, ?)`,
    ).run(
      run.id,
      run.agent,
      run.workflow,
      run.key,
      JSON.stringify(run.input),
      JSON.stringify(run.versions),
      JSON.stringify(run.meta),
      run.createdAt,
      run.updatedAt,
    );
    v1.prepare(
      `INSERT INTO transitions (run_id, id, at, actor_kind, actor_id, from_state, to_state, paused_reason, reason, versions)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(...transitionParams(transition));
    v1.close();

    const backend = await open({ path });
    const migrated = await backend.getRun(run.id);
    expect(migrated).toStrictEqual(run);
    expect(migrated).toMatchObject({
      parentRunId: null,
      parentClosePolicy: null,
      stopRequest: undefined,
      continuedFrom: null,
      continuedTo: null,
      usage: undefined,
      acceptance: undefined,
    });
    expect(await backend.listTransitions(run.id)).toStrictEqual([transition]);
    expect((await backend.createRun(runInput({ key: "k" }))).created).toBe(false);
    expect(await backend.loadWaits(run.id)).toStrictEqual([]);
    expect(await backend.listSignals(run.id)).toStrictEqual([]);
    expect(schemaVersionOf(path)).toBe(String(SCHEMA_VERSION));
    const raw = new Database(path, { readonly: true });
    try {
      // The key index leaves continued runs out, so that a continueAsNew successor takes the key over.
      expect(raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'runs_by_key'").pluck().get()).toMatch(
        /WHERE run_key IS NOT NULL AND continued_to IS NULL/,
      );
      expect(raw.prepare("SELECT count(*) FROM blobs").pluck().get()).toBe(0);
    } finally {
      raw.close();
    }
    // Opening it again migrates nothing more.
    await backend.close();
    expect(await (await open({ path })).getRun(run.id)).toStrictEqual(run);
  });

  it("upgrades a version 2 file in place: its runs and steps load as before, and the new fields work", async () => {
    const path = tempPath();
    paths.push(path);
    const v2 = oldFile(path, [SCHEMA_V1, MIGRATION_V2], 2);
    const { run, transition } = pendingRun(runInput({ key: "k2" }));
    const v2Columns = [
      "id",
      "agent",
      "workflow",
      "run_key",
      "state",
      "paused_reason",
      "input",
      "output",
      "error",
      "epoch",
      "lease_owner",
      "lease_expires_at",
      "recoveries",
      "last_transition_id",
      "versions",
      "meta",
      "parent_run_id",
      "parent_close_policy",
      "stop_request",
      "continued_from",
      "continued_to",
      "created_at",
      "updated_at",
    ];
    // A run held by a worker at epoch 1, as version 2 of Cairn wrote it.
    const held = { ...run, epoch: 1, leaseOwner: "w1", leaseExpiresAt: T0 + LEASE_MS };
    v2.prepare(`INSERT INTO runs (${v2Columns.join(", ")}) VALUES (${v2Columns.map(() => "?").join(", ")})`).run(
      held.id,
      held.agent,
      held.workflow,
      held.key,
      held.state,
      null,
      JSON.stringify(held.input),
      null,
      null,
      held.epoch,
      held.leaseOwner,
      held.leaseExpiresAt,
      0,
      1,
      JSON.stringify(held.versions),
      JSON.stringify(held.meta),
      null,
      null,
      null,
      null,
      null,
      held.createdAt,
      held.updatedAt,
    );
    v2.prepare(
      `INSERT INTO transitions (run_id, id, at, actor_kind, actor_id, from_state, to_state, paused_reason, reason, versions)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(...transitionParams(transition));
    const oldStep = fullStep(run.id, 1, 1);
    // Version 2's step columns: the encoded values without the trailing `effect`.
    const values = encodeStep(oldStep, 1 << 20).values.slice(0, -1);
    v2.prepare(
      `INSERT INTO steps (run_id, seq, kind, name, status, args_digest, args, result, error, attempts, heartbeat,
         usage, started_at, ended_at, epoch) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
       WHERE EXISTS (SELECT 1 FROM runs WHERE id = ? AND epoch = ?)`,
    ).run(...stepParams(run.id, values, 1));
    v2.close();

    const backend = await open({ path });
    expect(schemaVersionOf(path)).toBe(String(SCHEMA_VERSION));
    const loaded = await backend.getRun(run.id);
    expect(loaded).toStrictEqual(held);
    expect(loaded?.usage).toBeUndefined();
    expect(loaded?.acceptance).toBeUndefined();
    const [step] = await backend.loadSteps(run.id);
    expect(step).toStrictEqual(oldStep);
    expect(step && "effect" in step).toBe(false);

    // The new columns take values: an effect on a step, usage on the run's end, then a verdict.
    const withEffect: StepRecord = { ...fullStep(run.id, 2, 1), effect: effectRecord(2) };
    await backend.saveSteps([withEffect], { epoch: 1, sync: true });
    expect(await backend.loadSteps(run.id)).toStrictEqual([oldStep, withEffect]);
    const running = (await backend.transition(move(held, "PENDING", "RUNNING"))).run;
    const usage = { inputTokens: 5, outputTokens: 7, modelCalls: 1, costUsd: 0.25, toolCalls: 2, steps: 2 };
    const { run: done } = await backend.transition(
      move(running, "RUNNING", "COMPLETED", { patch: { output: { ok: true }, usage, releaseLease: true } }),
    );
    expect(done.usage).toStrictEqual(usage);
    const verdict: AcceptanceRecord = { decision: "accepted", by: USER, note: "fine", at: T0 + 9_000 };
    const accepted = await backend.recordAcceptance(run.id, verdict);
    expect(accepted).toStrictEqual({ ...done, acceptance: verdict });
    await backend.close();
    const reopened = await open({ path });
    expect(await reopened.getRun(run.id)).toStrictEqual(accepted satisfies RunRecord);
  });

  it("upgrades a version 3 file in place: its transitions lead the feed, run by run, and new ones follow", async () => {
    const path = tempPath();
    paths.push(path);
    const v3 = oldFile(path, [SCHEMA_V1, MIGRATION_V2, MIGRATION_V3], 3);
    const insertRun = v3.prepare(
      `INSERT INTO runs (id, agent, workflow, run_key, state, paused_reason, input, output, error, epoch, lease_owner,
         lease_expires_at, recoveries, last_transition_id, versions, meta, created_at, updated_at)
       VALUES (?, ?, ?, NULL, 'PENDING', NULL, '{}', NULL, NULL, 0, NULL, NULL, 0, 1, ?, '{}', ?, ?)`,
    );
    const insertTransition = v3.prepare(
      `INSERT INTO transitions (run_id, id, at, actor_kind, actor_id, from_state, to_state, paused_reason, reason, versions)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // Written in an order other than (run, id): "b" first.
    const old = ["b", "a"].map((id) => pendingRun(runInput({ id: `old-${id}`, agent: `agent-${id}` })));
    for (const { run, transition } of old) {
      insertRun.run(run.id, run.agent, run.workflow, JSON.stringify(run.versions), run.createdAt, run.updatedAt);
      insertTransition.run(...transitionParams(transition));
    }
    v3.close();

    const backend = await open({ path });
    expect(schemaVersionOf(path)).toBe(String(SCHEMA_VERSION));
    const raw = new Database(path, { readonly: true });
    const feedId = raw.prepare("SELECT value FROM cairn_meta WHERE key = 'feed_id'").pluck().get();
    raw.close();
    expect(feedId).toMatch(/^[0-9a-f]{8}$/);
    const feed = await backend.listTransitionsSince({ after: null, limit: 10 });
    expect(feed.transitions.map((e) => [e.cursor, e.transition.runId, e.agent])).toEqual([
      [`${feedId}.1`, "old-a", "agent-a"],
      [`${feedId}.2`, "old-b", "agent-b"],
    ]);
    expect(feed.transitions.map((e) => e.transition)).toStrictEqual([old[1]?.transition, old[0]?.transition]);
    expect(await backend.latestTransitionCursor()).toBe(`${feedId}.2`);
    // New transitions come after them, in commit order.
    const claimed = (await backend.claimRun({
      workerId: "w1",
      now: T0,
      leaseMs: LEASE_MS,
      runId: "old-b",
    })) as RunRecord;
    const moved = await backend.transition(move(claimed, "PENDING", "RUNNING"));
    const fresh = await backend.createRun(runInput({ id: "new-c" }));
    const later = await backend.listTransitionsSince({ after: `${feedId}.2`, limit: 10 });
    expect(later.transitions.map((e) => [e.cursor, e.transition])).toStrictEqual([
      [`${feedId}.3`, moved.transition],
      [`${feedId}.4`, (await backend.listTransitions(fresh.run.id))[0]],
    ]);
    // A cursor of another file's feed is refused.
    const other = await open();
    await expect(other.listTransitionsSince({ after: `${feedId}.2`, limit: 10 })).rejects.toThrow(
      /not a cursor of the transition feed/,
    );
  });

  it("refuses a file written by a newer schema, naming the file and the fix", async () => {
    const first = await open();
    await first.close();
    const raw = new Database(first.path);
    raw.prepare("UPDATE cairn_meta SET value = ? WHERE key = 'schema_version'").run(String(SCHEMA_VERSION + 1));
    raw.close();
    const error = await new SqliteBackend({ path: first.path }).init().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect((error as Error).message).toContain(first.path);
    expect((error as Error).message).toMatch(
      new RegExp(`schema version ${SCHEMA_VERSION + 1}, newer than .* \\(${SCHEMA_VERSION}\\); upgrade Cairn`),
    );
  });
});
