import pg from "pg";
import { describe, expect, it } from "vitest";
import { backendPerTest } from "../../../test/helpers/postgres-backend-per-test.ts";
import { statements } from "./postgres-statements.ts";

/**
 * The sweep of child waits (`resolveEndedChildWaits`) runs on every worker's recovery tick: its
 * read must cost what the runs waiting for a child now cost, not what the tables hold.
 */

const files = backendPerTest();

describe("PostgresBackend's sweep of child waits", () => {
  it("reads the open child waits from their partial index, however many runs and waits the tables hold", async () => {
    const b = await files.open();
    const q = pg.escapeIdentifier(b.schema);
    // 100,000 runs, every one a child of the one before, each with a child wait on the next: all
    // ended and resolved but for 19 PAUSED parents (every 5,000th but the last) whose wait is open,
    // and of those every other one's child has ended (the wait its end left open).
    await files.db.query(
      `INSERT INTO ${q}.runs (id, agent, workflow, state, paused_reason, input, epoch, recoveries, last_transition_id,
                              versions, meta, parent_run_id, created_at, updated_at)
       SELECT 'r' || lpad(g::text, 6, '0'), 'a', 'w',
              CASE WHEN g % 5000 = 0 THEN 'PAUSED' WHEN g % 10000 = 1 THEN 'RUNNING' ELSE 'COMPLETED' END,
              CASE WHEN g % 5000 = 0 THEN 'awaiting_child' END,
              '{}', 1, 0, 1, '{}', '{}', CASE WHEN g > 1 THEN 'r' || lpad((g - 1)::text, 6, '0') END, g, g
       FROM generate_series(1, 100000) AS g`,
    );
    await files.db.query(
      `INSERT INTO ${q}.waits (run_id, id, seq, kind, name, status, details, created_at)
       SELECT id, 'w1', 1, 'child', 'r' || lpad((substr(id, 2)::int + 1)::text, 6, '0'),
              CASE WHEN state = 'PAUSED' THEN 'open' ELSE 'resolved' END, '{}', 0
       FROM ${q}.runs WHERE id < 'r100000'`,
    );
    await files.db.query(`ANALYZE ${q}.runs`);
    await files.db.query(`ANALYZE ${q}.waits`);

    const sweep = statements(b.schema).endedChildWaitRuns.text;
    const { rows } = await files.db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sweep}`, [100]);
    type Node = {
      "Node Type": string;
      "Index Name"?: string;
      "Relation Name"?: string;
      "Shared Hit Blocks": number;
      "Shared Read Blocks": number;
      "Actual Rows": number;
      Plans?: Node[];
    };
    const [root] = (rows[0]?.["QUERY PLAN"] ?? []) as { Plan: Node }[];
    const nodes: Node[] = [];
    const walk = (node: Node | undefined) => {
      if (!node) return;
      nodes.push(node);
      for (const child of node.Plans ?? []) walk(child);
    };
    walk(root?.Plan);
    const blocks = (root?.Plan["Shared Hit Blocks"] ?? 0) + (root?.Plan["Shared Read Blocks"] ?? 0);
    // The PAUSED parents whose child has ended: r005000, r015000, … r095000 (the child of r…0000,
    // r…0001, is RUNNING).
    expect(root?.Plan["Actual Rows"]).toBe(10);
    expect(nodes.some((n) => n["Index Name"] === "waits_open_child")).toBe(true);
    expect(nodes.filter((n) => n["Node Type"] === "Seq Scan")).toEqual([]);
    const pages = async (table: string) =>
      (
        await files.db.query<{ relpages: number }>(
          `SELECT relpages FROM pg_class WHERE oid = '${q}.${table}'::regclass`,
        )
      ).rows[0]?.relpages ?? 0;
    // A scan of either table reads every block; 19 index entries and 29 lookups a few each.
    expect(blocks).toBeLessThan((await pages("waits")) / 2);
    expect(blocks).toBeLessThan((await pages("runs")) / 2);
  });
});
