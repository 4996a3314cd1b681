import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defineAgent, defineTool, Runtime, silentLogger, type ToolContext } from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { replayHistories } from "../src/testing.ts";
import { orders } from "./fixtures/replay-order-v1.ts";
import { cairn } from "./helpers/cli.ts";

/**
 * `cairn replay` (DESIGN §4, "Replaying histories against new code"): runs recorded by version 1
 * of an agent replayed through version 2, which swaps two steps: caught, with the step named,
 * from the database and from an exported contract; version 1 itself replays clean.
 */
const dir = mkdtempSync(join(tmpdir(), "cairn-replay-cli-"));
const db = join(dir, "runs.db");
const V1 = "test/fixtures/replay-order-v1.ts";
const V2 = "test/fixtures/replay-order-v2.ts";

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One finished run and one waiting for its signal, recorded by version 1. */
async function record(): Promise<{ done: string; open: string }> {
  const rt = new Runtime({ agents: [orders], backend: new SqliteBackend({ path: db }), logger: silentLogger });
  await rt.start();
  try {
    const done = await rt.run(orders, "process", { id: "o-1" });
    await rt.signal(done.id, "go", {}, { messageId: "m-1" });
    expect(await done.result()).toEqual({ id: "o-1", lines: 3, region: "emea" });
    const open = await rt.run(orders, "process", { id: "o-2" });
    for (let i = 0; i < 400 && (await rt.getRun(open.id)).state !== "PAUSED"; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    expect((await rt.getRun(open.id)).pausedReason).toBe("awaiting_signal");
    return { done: done.id, open: open.id };
  } finally {
    await rt.shutdown();
  }
}

describe("cairn replay", () => {
  it("catches two swapped steps in every recorded run, naming the step; the old code replays clean", async () => {
    const { done, open } = await record();
    const same = await cairn(["replay", "--module", V1, "--db", db]);
    expect(same.stderr).toBe("");
    expect(same.stdout).toContain(`ok        run ${done}  orders/process  (4 steps)`);
    expect(same.stdout).toContain(`ok        run ${open}  orders/process`);
    expect(same.stdout).toContain("replayed 2 runs against test/fixtures/replay-order-v1.ts: 2 ok, 0 diverged");
    expect(same.code).toBe(0);

    const swapped = await cairn(["replay", "--module", V2, "--db", db]);
    for (const id of [done, open]) {
      expect(swapped.stderr).toContain(
        `DIVERGED  run ${id}  orders/process  step 1: the history has tool "fetch", the code asked for tool "enrich"`,
      );
    }
    expect(swapped.stdout).toContain("2 diverged");
    expect(swapped.code).toBe(1);

    // The same from an exported contract, without the database.
    const exported = await cairn(["export", done, "--db", db]);
    expect(exported.code).toBe(0);
    const file = join(dir, "done.json");
    writeFileSync(file, exported.stdout);
    const fromFile = await cairn(["replay", "--module", V2, file]);
    expect(fromFile.stderr).toContain(`DIVERGED  run ${done}  orders/process  step 1: the history has tool "fetch"`);
    expect(fromFile.stdout).toContain("replayed 1 runs");
    expect(fromFile.code).toBe(1);
    expect((await cairn(["replay", "--module", V1, file])).code).toBe(0);
  }, 120_000);

  it("replays without executing: no tool of the new code runs, and a call past the history stops there", async () => {
    let ran = 0;
    const tools = Object.fromEntries(
      Object.entries(orders.tools).map(([name, tool]) => [
        name,
        defineTool({
          run: (ctx: ToolContext, args: unknown) => {
            ran++;
            return tool.run(ctx, args as { id: string });
          },
        }),
      ]),
    );
    const counting = defineAgent({ name: "orders", tools, workflows: orders.workflows });
    const backend = new SqliteBackend({ path: db });
    await backend.init();
    const runs = await backend.listRuns({ agent: "orders" });
    const histories = await Promise.all(runs.map(async (run) => ({ run, steps: await backend.loadSteps(run.id) })));
    await backend.close();
    const report = await replayHistories({ agents: [counting], histories });
    expect(report.problems).toEqual([]);
    expect(report.results.map((r) => r.status)).toEqual(["ok", "ok"]);
    // The open run's history ends at its signal wait: the replay stopped there, nothing ran.
    expect(ran).toBe(0);
  });
});
