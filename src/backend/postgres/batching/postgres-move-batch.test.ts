import pg from "pg";
import { describe, expect, it } from "vitest";
import { backendPerTest } from "../../../../test/helpers/postgres-backend-per-test.ts";
import { until } from "../../../../test/helpers/runtime-helpers.ts";
import { StorageRejectedError } from "../../../core/errors.ts";
import type { RunRecord } from "../../../core/records.ts";
import type { TransitionRequest } from "../../backend.ts";
import { fullStep, move, runningRun, storedState, T0 } from "../../conformance/conformance-fixtures.ts";
import type { RunRow } from "../../rows/run-rows.ts";
import { applyTransition } from "../../rules/transition-rules.ts";
import type { PostgresBackend } from "../postgres-backend.ts";
import { wakeChannel } from "../postgres-listener.ts";
import { statements } from "../postgres-statements.ts";
import { moveParams } from "./postgres-move-batch.ts";

/**
 * `moveRuns`, the statement that writes a batch of transitions needing nothing but their runs'
 * rows: what it writes must be what the shared rule (`applyTransition`) makes of the same request,
 * and every request it cannot write that way must be left untouched for the planners.
 */

const files = backendPerTest();
const open = () => files.open();

/** Runs `moveRuns` for `requests` as the backend does; returns the ids of the runs it moved. */
async function moveDirectly(b: PostgresBackend, requests: TransitionRequest[]): Promise<string[]> {
  const move = moveParams(requests, b.inlineLimitBytes);
  if (!move) return [];
  const { rows } = await files.db.query<RunRow>(statements(b.schema).moveRuns.text, move.params(wakeChannel(b.schema)));
  return rows.map((row) => row.id).sort();
}

/** A RUNNING run's end, as a worker asks for it. */
function endOf(run: Pick<RunRecord, "id" | "epoch">): TransitionRequest {
  return move(run, "RUNNING", "COMPLETED", { patch: { output: { done: true }, releaseLease: true } });
}

describe("PostgresBackend moves plain transitions in one statement", () => {
  it("writes what the shared rule makes of each request: the run, its transition, its riding steps", async () => {
    const b = await open();
    const runs = await Promise.all(Array.from({ length: 5 }, () => runningRun(b)));
    const [completed, failed, interrupted, handedBack, blocked] = runs as [
      RunRecord,
      RunRecord,
      RunRecord,
      RunRecord,
      RunRecord,
    ];
    const usage = { steps: 20, modelCalls: 1, tokens: { input: 10, output: 5 }, costUsd: 0.01 };
    const requests: TransitionRequest[] = [
      move(completed, "RUNNING", "COMPLETED", {
        patch: { output: { total: 42, rows: [1, "two"] }, usage: usage as never, releaseLease: true },
        steps: [fullStep(completed.id, 1, completed.epoch)],
      }),
      move(failed, "RUNNING", "FAILED", {
        patch: { error: { name: "ToolFailedError", message: "boom", code: "TOOL_FAILED", retryable: false } },
      }),
      move(interrupted, "RUNNING", "INTERRUPTED", { patch: { releaseLease: true, countRecovery: true } }),
      move(handedBack, "RUNNING", "INTERRUPTED", { patch: { releaseLease: true, resetRecoveries: true } }),
      move(blocked, "RUNNING", "BLOCKED", { patch: { clearStopRequest: true } }),
    ];
    // Runs recovered twice already: one more counted, or the count set back to 0.
    const q = pg.escapeIdentifier(b.schema);
    await files.db.query(`UPDATE ${q}.runs SET recoveries = 2 WHERE id = ANY ($1)`, [[interrupted.id, handedBack.id]]);
    const before = new Map<string, RunRecord | undefined>();
    for (const run of runs) before.set(run.id, await b.getRun(run.id));
    expect(await moveDirectly(b, requests)).toEqual(runs.map((r) => r.id).sort());
    for (const request of requests) {
      const expected = applyTransition(before.get(request.runId), request);
      const stored = await storedState(b, request.runId);
      expect(stored.run).toStrictEqual(expected.run);
      if (request.patch?.countRecovery || request.patch?.resetRecoveries) {
        expect(stored.run?.recoveries).toBe(request.patch.countRecovery ? 3 : 0);
      }
      expect(stored.transitions.at(-1)).toStrictEqual(expected.transition);
      expect(stored.transitions.map((t) => t.id)).toEqual([1, 2, 3]);
      expect(await b.loadSteps(request.runId)).toStrictEqual(request.steps ?? []);
    }
    // The feed holds each new transition once, after the run's earlier ones (it shows what every
    // transaction on the server that could still write below it has ended: wait for that).
    const feed = await until(async () => {
      const { transitions } = await b.listTransitionsSince({ after: null, limit: 100 });
      return transitions.length >= 15 && transitions;
    });
    for (const run of runs) {
      expect(feed.filter((e) => e.transition.runId === run.id).map((e) => e.transition.id)).toEqual([1, 2, 3]);
    }
  });

  it("leaves to the planners a run that ends with a parent, an open wait or a child still running, a stale fence, a moved state and an unseen transition", async () => {
    const b = await open();
    const q = pg.escapeIdentifier(b.schema);
    const parent = await runningRun(b);
    const child = await runningRun(b, { overrides: { parentRunId: parent.id } });
    const waiting = await runningRun(b);
    await files.db.query(
      `INSERT INTO ${q}.waits (run_id, id, seq, kind, name, status, details, due_at, resolution, created_at)
       VALUES ($1, 'w1', 1, 'signal', 'go', 'open', '{}', NULL, NULL, $2)`,
      [waiting.id, T0],
    );
    const stale = await runningRun(b);
    const elsewhere = await runningRun(b);
    const ahead = await runningRun(b);
    // A counter ahead of the transitions the statement can see, as a transition that committed
    // after the statement began leaves it.
    await files.db.query(`UPDATE ${q}.runs SET last_transition_id = last_transition_id + 1 WHERE id = $1`, [ahead.id]);
    // A run whose only child has ended: nothing to stop, it moves.
    const bereaved = await runningRun(b);
    const endedChild = await runningRun(b, { overrides: { parentRunId: bereaved.id } });
    await b.transition(move(endedChild, "RUNNING", "COMPLETED", { patch: { output: null, releaseLease: true } }));
    const paused = await runningRun(b);
    const refused = [child, parent, waiting, stale, elsewhere, ahead];
    const before = await Promise.all(refused.map((run) => storedState(b, run.id)));
    const moved = await moveDirectly(b, [
      move(child, "RUNNING", "COMPLETED"),
      move(parent, "RUNNING", "COMPLETED"),
      move(waiting, "RUNNING", "FAILED"),
      move({ id: stale.id, epoch: stale.epoch + 7 }, "RUNNING", "COMPLETED"),
      move(elsewhere, "PAUSED", "RESUMING"),
      move(ahead, "RUNNING", "COMPLETED"),
      move(bereaved, "RUNNING", "COMPLETED"),
      // Not an end: the move needs the row alone, whatever the run's family.
      move(paused, "RUNNING", "PAUSED", { pausedReason: "awaiting_approval" }),
    ]);
    expect(moved).toEqual([bereaved.id, paused.id].sort());
    for (const [i, run] of refused.entries()) expect(await storedState(b, run.id)).toStrictEqual(before[i]);
    expect((await b.getRun(paused.id))?.pausedReason).toBe("awaiting_approval");
    // Through the backend, the planners take the refused ones: the parent's end stops its child.
    const { run: ended } = await b.transition(move(parent, "RUNNING", "COMPLETED", { patch: { releaseLease: true } }));
    expect(ended.state).toBe("COMPLETED");
    expect((await b.getRun(child.id))?.stopRequest).toMatchObject({ kind: "suspend" });
  });

  it("gives the planners the whole batch when the statement fails, so a request that cannot be stored fails alone", async () => {
    const b = await open();
    const runs = await Promise.all(Array.from({ length: 3 }, () => runningRun(b)));
    const [first, bad, last] = runs as [RunRecord, RunRecord, RunRecord];
    // A NUL in a text column: PostgreSQL refuses it in any statement that reads it from JSON.
    // (Reasons are made storable before they get here; an actor's id is taken as given.)
    const outcomes = await Promise.allSettled([
      b.transition(endOf(first)),
      b.transition({ ...endOf(bad), actor: { kind: "worker", id: "w\u0000" } }),
      b.transition(endOf(last)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toContain("unsupported Unicode escape sequence");
    expect((outcomes[1] as PromiseRejectedResult).reason).toBeInstanceOf(StorageRejectedError);
    expect((await b.getRun(bad.id))?.state).toBe("RUNNING");
    for (const run of [first, last]) expect((await b.getRun(run.id))?.state).toBe("COMPLETED");
  });

  it("writes nothing for a run taken over while the statement waited for its lock", async () => {
    const b = await open();
    const q = pg.escapeIdentifier(b.schema);
    const run = await runningRun(b);
    const before = await storedState(b, run.id);
    // Another transaction holds the run's row; the statement waits for it.
    const other = new pg.Client({ connectionString: files.db.url });
    await other.connect();
    try {
      await other.query("BEGIN");
      await other.query(`SELECT id FROM ${q}.runs WHERE id = $1 FOR UPDATE`, [run.id]);
      const moving = moveDirectly(b, [move(run, "RUNNING", "COMPLETED", { patch: { releaseLease: true } })]);
      await files.db.query("SELECT pg_sleep(0.2)");
      // It commits a takeover (a new epoch) while the statement waits.
      await other.query(`UPDATE ${q}.runs SET epoch = epoch + 1 WHERE id = $1`, [run.id]);
      await other.query("COMMIT");
      expect(await moving).toEqual([]);
    } finally {
      await other.end();
    }
    const after = await storedState(b, run.id);
    expect(after.run?.epoch).toBe(run.epoch + 1);
    expect({ ...after, run: { ...after.run, epoch: run.epoch } }).toStrictEqual(before);
  });

  it("reads only the rows of its runs, however many runs, waits and children the tables hold", async () => {
    const b = await open();
    const q = pg.escapeIdentifier(b.schema);
    // 100,000 runs, one in a thousand RUNNING, a child each for a tenth of the others, and an open
    // wait for one in two thousand; fifty RUNNING ones end, half of them refused by their wait.
    await files.db.query(
      `INSERT INTO ${q}.runs (id, agent, workflow, state, input, epoch, recoveries, last_transition_id, versions, meta,
                              parent_run_id, created_at, updated_at)
       SELECT 'r' || lpad(g::text, 6, '0'), 'a', 'w', CASE WHEN g % 1000 = 0 THEN 'RUNNING' ELSE 'COMPLETED' END,
              '{}', 1, 0, 1, '{}', '{}', CASE WHEN g % 10 = 1 THEN 'r' || lpad((g + 1)::text, 6, '0') END, g, g
       FROM generate_series(1, 100000) AS g`,
    );
    await files.db.query(
      `INSERT INTO ${q}.transitions (run_id, id, at, actor_kind, actor_id, from_state, to_state, reason, versions, feed_key)
       SELECT id, 1, 0, 'user', 'u', NULL, state, 'created', '{}', pg_current_xact_id() FROM ${q}.runs`,
    );
    await files.db.query(
      `INSERT INTO ${q}.waits (run_id, id, seq, kind, name, status, details, created_at)
       SELECT id, 'w1', 1, 'signal', 'go', CASE WHEN created_at % 2000 = 0 THEN 'open' ELSE 'resolved' END, '{}', 0
       FROM ${q}.runs`,
    );
    for (const table of ["runs", "transitions", "waits"]) await files.db.query(`ANALYZE ${q}.${table}`);
    const ending = Array.from({ length: 50 }, (_, i) => `r${String((i + 1) * 1000).padStart(6, "0")}`);
    const move = moveParams(
      ending.map((id) => endOf({ id, epoch: 1 })),
      b.inlineLimitBytes,
    );
    const { rows } = await files.db.query(
      `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statements(b.schema).moveRuns.text}`,
      move?.params(wakeChannel(b.schema)),
    );
    // Every table is read by index lookups, none scanned whole (each holds over 1,000 pages).
    type Node = { "Node Type": string; "Relation Name"?: string; "Actual Rows": number; Plans?: Node[] };
    const nodes = (node: Node): Node[] => [node, ...(node.Plans ?? []).flatMap(nodes)];
    const [root] = (rows[0]?.["QUERY PLAN"] ?? []) as { Plan: Node }[];
    const all = root ? nodes(root.Plan) : [];
    const scanned = all.filter((n) => n["Node Type"] === "Seq Scan").map((n) => n["Relation Name"]);
    expect(scanned).toEqual([]);
    expect(all.filter((n) => n["Relation Name"] === "runs").length).toBeGreaterThan(0);
    expect(root?.Plan["Actual Rows"]).toBe(25);
  });
});
