import { createHash } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestDatabase, type TestDatabase } from "../../../test/helpers/postgres.ts";
import { backendsPerTest } from "../../../test/helpers/postgres-backends-per-test.ts";
import { until } from "../../../test/helpers/runtime-helpers.ts";
import { LeaseLostError } from "../../core/errors.ts";
import type { RunRecord, StepRecord } from "../../core/records.ts";
import { fullStep, LEASE_MS, runInput, runningRun, startedStep, T0 } from "../conformance/conformance-fixtures.ts";
import { largeJson } from "../conformance/journal-conformance.ts";

/** Step writes and reads on PostgreSQL (`postgres-journal.ts`, the step batch in `batching/`). */

// One database per test file (embedded PostgreSQL, or CAIRN_TEST_DATABASE_URL's server), and one
// schema per backend under test, so nothing here sees another test's rows.
let db: TestDatabase;

beforeAll(async () => {
  db = await startTestDatabase();
});

afterAll(async () => {
  await db?.close();
});

describe("PostgresBackend", () => {
  const { open } = backendsPerTest(() => db);

  it("refuses a step write that waited on the run row while another worker took the run over", async () => {
    const backend = await open();
    const { run } = await backend.createRun(runInput());
    const claimedRun = (await backend.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
    const runs = `${pg.escapeIdentifier(backend.schema)}.runs`;
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      // Another worker's claim holds the row; the step write must wait for it, then see epoch 2.
      await other.query("BEGIN");
      await other.query(`SELECT * FROM ${runs} WHERE id = $1 FOR UPDATE`, [run.id]);
      const write = backend
        .saveSteps([fullStep(run.id, 1, claimedRun.epoch)], { epoch: claimedRun.epoch, sync: true })
        .then(
          () => "stored",
          (e: unknown) => e,
        );
      await until(async () => {
        const waiting = await db.query(
          "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        );
        return (waiting.rowCount ?? 0) > 0;
      });
      await other.query(`UPDATE ${runs} SET epoch = epoch + 1, lease_owner = 'w2' WHERE id = $1`, [run.id]);
      await other.query("COMMIT");
      expect(await write).toBeInstanceOf(LeaseLostError);
    } finally {
      await other.end();
    }
    expect(await backend.loadSteps(run.id)).toEqual([]);
  });

  describe("out-of-line payloads", () => {
    const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
    const reference = (text: string) => `{"$cairnBlob":"sha256:${sha256(text)}","bytes":${Buffer.byteLength(text)}}`;

    /** The step columns (as text) as the journal's latest entry of each seq holds them, and the blobs. */
    async function stored(schema: string): Promise<{
      steps: { seq: number; args: string | null; result: string | null }[];
      blobs: { digest: string; text: string; bytes: number }[];
    }> {
      const q = pg.escapeIdentifier(schema);
      const steps = await db.query(
        `SELECT DISTINCT ON (run_id, seq) seq, args, result
         FROM (SELECT j.run_id, j.id, (e->>'seq')::integer AS seq, e->>'args' AS args, e->>'result' AS result
               FROM ${q}.journal j, json_array_elements(j.steps) e) t
         ORDER BY run_id, seq, id DESC`,
      );
      const blobs = await db.query(`SELECT digest, text, bytes::integer AS bytes FROM ${q}.blobs ORDER BY digest`);
      return { steps: steps.rows as never, blobs: blobs.rows as never };
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
      await backend.saveSteps([first, { ...second }], { epoch: run.epoch, sync: false });
      const { steps, blobs } = await stored(backend.schema);
      expect(steps).toEqual([
        { seq: 1, args: JSON.stringify(first.args), result: reference(text) },
        { seq: 2, args: JSON.stringify(second.args), result: reference(text) },
      ]);
      expect(blobs).toEqual([{ digest: sha256(text), text, bytes: Buffer.byteLength(text) }]);
      expect(await backend.loadSteps(run.id)).toStrictEqual([first, second]);
      const other = await open({ schema: backend.schema });
      expect(await other.loadSteps(run.id)).toStrictEqual([first, second]);
    });

    it("keeps JSON text of exactly the inline limit in the row and stores one byte more out of line", async () => {
      // The limit counts UTF-8 bytes: "é" takes two.
      const atLimit = "é".repeat(499); // 2 + 998 bytes of JSON text
      const over = `${atLimit}a`;
      const small = await open({ inlineLimitBytes: 1000 });
      const run = await runningRun(small);
      const step: StepRecord = { ...fullStep(run.id, 1, run.epoch), args: atLimit, result: over };
      await small.saveSteps([step], { epoch: run.epoch, sync: true });
      expect((await stored(small.schema)).steps).toEqual([
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
      const { steps, blobs } = await stored(backend.schema);
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
      expect(await stored(backend.schema)).toEqual({ steps: [], blobs: [] });
    });

    it("stores the same large result from two pools at once as one blob", async () => {
      const a = await open();
      const b = await open({ schema: a.schema });
      const one = await runningRun(a);
      const two = await runningRun(b);
      const result = largeJson("shared", 500_000);
      await Promise.all([
        a.saveSteps([{ ...fullStep(one.id, 1, one.epoch), result }], { epoch: one.epoch, sync: true }),
        b.saveSteps([{ ...fullStep(two.id, 1, two.epoch), result }], { epoch: two.epoch, sync: true }),
      ]);
      expect((await stored(a.schema)).blobs).toHaveLength(1);
      expect((await b.loadSteps(one.id))[0]?.result).toStrictEqual(result);
      expect((await a.loadSteps(two.id))[0]?.result).toStrictEqual(result);
    });
  });

  it("commits start records and renewals without waiting for the WAL flush, results with it", async () => {
    const levels = async (durability: "machine" | "process") => {
      const pool = new pg.Pool({ connectionString: db.url, max: 2 });
      const seen: unknown[] = [];
      const query = pool.query.bind(pool) as (config: pg.QueryConfig) => Promise<pg.QueryResult>;
      vi.spyOn(pool, "query").mockImplementation(((config: pg.QueryConfig) => {
        if (typeof config === "object" && config.text.includes("set_config")) {
          seen.push(config.text.includes("INSERT INTO") ? (config.values?.[2] ?? "server default") : "off");
        }
        return query(config);
      }) as never);
      try {
        const backend = await open({ pool, durability });
        const { run } = await backend.createRun(runInput());
        const c = (await backend.claimRun({ workerId: "w1", now: T0, leaseMs: LEASE_MS })) as RunRecord;
        await backend.saveSteps([startedStep(run.id, 1, c.epoch)], { epoch: c.epoch, sync: false });
        await backend.saveSteps([fullStep(run.id, 1, c.epoch)], { epoch: c.epoch, sync: true });
        await backend.renewLeases({
          workerId: "w1",
          now: T0 + 1,
          leaseMs: LEASE_MS,
          runs: [{ runId: c.id, epoch: c.epoch }],
        });
        expect((await backend.loadSteps(run.id))[0]?.status).toBe("completed");
        return seen;
      } finally {
        await pool.end();
      }
    };
    expect(await levels("machine")).toEqual(["off", "server default", "off"]);
    expect(await levels("process")).toEqual(["off", "off", "off"]);
  });
});
