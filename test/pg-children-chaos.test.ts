import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import type { RunRecord, RunState, TransitionRecord } from "../src/index.ts";
import { canTransition, Runtime, silentLogger } from "../src/index.ts";
import { PostgresBackend } from "../src/postgres.ts";
import { prng } from "./chaos/chaos-agent.ts";
import { startTestDatabase, type TestDatabase } from "./helpers/postgres.ts";
import { type ChildInput, familyAgent, type ParentOutput } from "./pg-children/family-agent.ts";

/**
 * 800 parents on PostgreSQL whose children end as they pause (issue 21): each parent spawns a
 * child and waits for it; the child ends at once, so its end commits while its parent is pausing on
 * it, or waits for the parent's row while the parent's pause commits. Until issue 21 the lock of
 * such an end could leave the parent out (see DESIGN §7, *locks*): the wait stayed open and the
 * parent PAUSED for good (300 to 337 of the 800 here, on the code before the fix), and a child's
 * end could fail ("no run").
 *
 * 4 worker processes (test/pg-children/family-worker.ts, 50 runs each at a time) share one schema
 * that holds 20,000 finished runs of history first (the plan PostgreSQL picks for a table of that
 * size is the one under which the old lock lost rows; a fresh table got another). The parents are
 * started 20 every 500 ms, so that the workers keep up and each child runs as soon as it exists,
 * in an order and with inputs drawn from the seed (printed; `CAIRN_CHAOS_SEED=<n>` replays one);
 * one child in 8 fails as planned.
 *
 * Then: every parent COMPLETED with its child's output (or how its child ended), every child ended
 * as planned, no parent is left PAUSED on a child that ended, no wait needed the sweep of child
 * waits (the child's end resolved every one itself), no worker logged an error or died, and every
 * transition log is gapless and legal. The checks are soft: a failure reports every run that is
 * wrong, not only the first.
 */

const WORKER = join(import.meta.dirname, "pg-children", "family-worker.ts");
const PARENTS = 800;
const WORKERS = 4;
const START_BATCH = 20;
const START_EVERY_MS = 500;
const HISTORY = 20_000;
const ENDED: ReadonlySet<RunState> = new Set(["COMPLETED", "FAILED", "BLOCKED", "CANCELLED", "COMPENSATED"]);

const seed = Number(process.env.CAIRN_CHAOS_SEED ?? Date.now() % 1_000_000);
let db: TestDatabase | undefined;
const workers: { proc: ChildProcessWithoutNullStreams; lines: string[]; err: string; ending: boolean }[] = [];

afterAll(async () => {
  for (const w of workers) {
    w.ending = true;
    if (w.proc.exitCode === null && w.proc.signalCode === null) w.proc.kill("SIGKILL");
  }
  await db?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The parents' inputs, in the order they are started. */
function plan(seed: number): ChildInput[] {
  const random = prng(seed * 2_246_822_519);
  const inputs = Array.from({ length: PARENTS }, (_, i) => ({ n: i, fail: random() < 1 / 8 }));
  for (let i = inputs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [inputs[i], inputs[j]] = [inputs[j] as ChildInput, inputs[i] as ChildInput];
  }
  return inputs;
}

function startWorker(url: string, schema: string, crashes: string[]) {
  const proc = spawn(process.execPath, ["--import", "tsx", WORKER, url, schema]);
  const worker = { proc, lines: [] as string[], err: "", ending: false };
  let pending = "";
  proc.stdout.on("data", (d) => {
    pending += d;
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    worker.lines.push(...lines);
  });
  proc.stderr.on("data", (d) => (worker.err += d));
  proc.on("close", (code, signal) => {
    if (!worker.ending) crashes.push(`worker ${proc.pid} exited ${code ?? signal}: ${worker.err}`);
  });
  workers.push(worker);
  return worker;
}

describe("PostgreSQL: 800 parents whose children end as they pause, 4 worker processes", () => {
  it(`seed ${seed}: every parent resumes when its child ends, none is left paused`, async () => {
    const inputs = plan(seed);
    console.log(
      `pg children chaos seed ${seed} (replay with CAIRN_CHAOS_SEED=${seed}): ${PARENTS} parents, ` +
        `${inputs.filter((i) => i.fail).length} children failing as planned, ${WORKERS} workers`,
    );
    const began = Date.now();
    db = await startTestDatabase();
    const schema = db.schema("family");
    const client = new Runtime({
      agents: [familyAgent],
      backend: new PostgresBackend({ connectionString: db.url, schema, max: 4 }),
      logger: silentLogger,
      worker: false,
    });
    await client.start();
    const q = pg.escapeIdentifier(schema);
    await db.query(
      `INSERT INTO ${q}.runs (id, agent, workflow, state, input, epoch, recoveries, last_transition_id, versions, meta, created_at, updated_at)
       SELECT 'past-' || lpad(g::text, 6, '0'), 'archived', 'build', 'COMPLETED', '{}', 1, 0, 1, '{}', '{}', g, g
       FROM generate_series(1, ${HISTORY}) AS g`,
    );
    await db.query(`ANALYZE ${q}.runs`);

    const crashes: string[] = [];
    try {
      const started = Array.from({ length: WORKERS }, () => startWorker(db?.url as string, schema, crashes));
      const deadline = Date.now() + 60_000;
      while (!started.every((w) => w.lines.includes("ready"))) {
        if (Date.now() > deadline || crashes.length > 0) throw new Error(`workers not ready: ${crashes.join("; ")}`);
        await sleep(50);
      }

      // ── Start the parents, 20 every 500 ms ─────────────────────────────────────────────────
      const t0 = Date.now();
      const ids: string[] = [];
      for (let i = 0; i < inputs.length; i += START_BATCH) {
        await sleep(t0 + (i / START_BATCH) * START_EVERY_MS - Date.now());
        const batch = inputs.slice(i, i + START_BATCH);
        const handles = await Promise.all(batch.map((input) => client.run(familyAgent, "parent", input)));
        ids.push(...handles.map((h) => h.id));
      }
      const startMs = Date.now() - t0;

      // ── Until every parent ended, or none ended for 30 s (those left are stranded) ──────────
      let ended = 0;
      let lastProgress = Date.now();
      for (;;) {
        const runs = await client.listRuns({ agent: "family", workflow: "parent", limit: 1000 });
        const now = runs.filter((r) => ENDED.has(r.state)).length;
        if (now === PARENTS) break;
        if (now > ended) lastProgress = Date.now();
        ended = now;
        if (Date.now() - lastProgress > 30_000 || Date.now() - t0 > 240_000) break;
        await sleep(250);
      }
      const drainMs = Date.now() - t0 - startMs;

      // ── Every parent and child as planned ──────────────────────────────────────────────────
      const stranded: string[] = [];
      const wrong: string[] = [];
      let pausedOnChild = 0;
      let resolvedAtOnce = 0;
      let swept = 0;
      let transitionsChecked = 0;
      for (const [i, id] of ids.entries()) {
        const input = inputs[i] as ChildInput;
        const { run, transitions } = await client.history(id);
        const child = (await client.getRun(`${id}.1`)) as RunRecord;
        if (run.state === "PAUSED" && run.pausedReason === "awaiting_child" && ENDED.has(child.state)) {
          stranded.push(`${id} (child ${child.id} ${child.state})`);
        }
        const expected: ParentOutput = input.fail ? { childEnded: "RUN_FAILED" } : { got: input.n * 2 };
        if (run.state !== "COMPLETED" || JSON.stringify(run.output) !== JSON.stringify(expected)) {
          wrong.push(
            `${id}: ${run.state} ${JSON.stringify(run.output)}, expected COMPLETED ${JSON.stringify(expected)}`,
          );
        }
        const childWanted = input.fail ? "FAILED" : "COMPLETED";
        const childError = child.error?.message ?? "";
        if (child.state !== childWanted || (input.fail && !childError.includes("fails as planned"))) {
          wrong.push(`child ${child.id}: ${child.state} ${childError}, expected ${childWanted}`);
        }
        const resumed = transitions.filter((t) => t.from === "PAUSED" && t.to === "RESUMING");
        if (transitions.some((t) => t.pausedReason === "awaiting_child")) pausedOnChild += 1;
        else if (run.state === "COMPLETED") resolvedAtOnce += 1;
        swept += resumed.filter((t) => t.reason.includes("sweep of child waits")).length;
        checkLog(id, transitions, run.state);
        transitionsChecked += transitions.length;
      }
      const errors = workers.flatMap((w) => w.lines.filter((line) => line.startsWith("error ")));

      console.log(
        [
          `pg children chaos seed ${seed}: ${PARENTS - stranded.length - wrong.length} parents right, ` +
            `${stranded.length} stranded PAUSED on an ended child, ${wrong.length} runs wrong`,
          `${pausedOnChild} parents paused on their child and were resumed by its end, ${resolvedAtOnce} found it ended ` +
            `when they paused; ${swept} waits resolved by the sweep of child waits; ${errors.length} worker errors`,
          `transitions checked: ${transitionsChecked}; time: starts ${startMs} ms, drain ${drainMs} ms, all ${Date.now() - began} ms`,
        ].join("\n  "),
      );
      expect.soft(stranded, "parents left PAUSED on a child that ended").toEqual([]);
      expect.soft(wrong).toEqual([]);
      expect.soft(swept, "waits that only the sweep resolved (the child's end missed them)").toBe(0);
      expect.soft(errors.slice(0, 10)).toEqual([]);
      expect.soft(crashes).toEqual([]);
      // The premise: the children's ends met their parents' pauses (most parents pause first: 500
      // to 600 of the 800 in the runs measured, the others find their child ended already).
      expect.soft(pausedOnChild).toBeGreaterThan(PARENTS / 4);

      for (const w of started) {
        w.ending = true;
        w.proc.kill("SIGTERM");
      }
      for (const w of started) {
        const code = await new Promise((resolve) =>
          w.proc.exitCode !== null ? resolve(w.proc.exitCode) : w.proc.on("close", resolve),
        );
        expect.soft(code, `worker ${w.proc.pid}: ${w.err}`).toBe(143);
      }
    } finally {
      await client.shutdown();
    }
  }, 300_000);
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
      continue;
    }
    const before = transitions[i - 1] as TransitionRecord;
    expect.soft(t.from, `transition ${t.id} of ${id}`).toBe(before.to);
    expect.soft(canTransition(t.from as RunState, t.to), `${id} #${t.id}: ${t.from} -> ${t.to}`).toBe(true);
  }
  expect.soft(transitions.at(-1)?.to, `last transition of ${id}`).toBe(state);
}
