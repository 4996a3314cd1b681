import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SWEPT_NOTE } from "../src/backend/rules/child-sweep-rules.ts";
import { defineAgent } from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { Runtimes, until } from "./helpers/runtime-helpers.ts";

/**
 * The worker's side of the sweep of child waits: a parent left PAUSED on a child whose end did not
 * resolve its wait is resumed by the next worker's recovery sweep (one runs when a worker starts),
 * gets the child's outcome and completes.
 */

const root = mkdtempSync(join(tmpdir(), "cairn-child-sweep-"));
const runtimes = new Runtimes();
afterAll(async () => {
  await runtimes.closeAll();
  rmSync(root, { recursive: true, force: true });
});

const family = defineAgent({
  name: "family",
  tools: {},
  workflows: {
    async child(ctx, _input: null) {
      return ctx.waitForSignal("go");
    },
    async parent(ctx, _input: null) {
      const child = await ctx.spawn("family", "child", null);
      return { got: await child.result() };
    },
  },
});

describe("the worker's sweep of child waits", () => {
  it("resumes a parent whose child ended without resolving its wait, and the parent completes with the child's output", async () => {
    const path = join(root, "cairn.db");
    const first = runtimes.make({ agents: [family], backend: new SqliteBackend({ path }) });
    await first.start();
    const run = await first.run(family, "parent", null);
    const childId = `${run.id}.1`;
    await until(
      async () => (await first.getRun(run.id)).state === "PAUSED" && (await first.getRun(childId)).state === "PAUSED",
      { what: "the parent and its child to pause" },
    );
    await first.shutdown();

    // The child ends without its end resolving the parent's wait: what the race of issue 21 left
    // behind on PostgreSQL, written here by hand (the backends no longer do it).
    const raw = new Database(path);
    raw
      .prepare("UPDATE runs SET state = 'COMPLETED', paused_reason = NULL, output = ? WHERE id = ?")
      .run(JSON.stringify("ended elsewhere"), childId);
    raw.close();

    const second = runtimes.make({ agents: [family], backend: new SqliteBackend({ path }) });
    await second.start();
    expect(await second.handle(run.id).result({ timeoutMs: 10_000 })).toEqual({ got: "ended elsewhere" });
    const waits = await second.waits(run.id);
    expect(waits.find((w) => w.kind === "child")).toMatchObject({
      status: "resolved",
      resolution: { outcome: "child_ended", note: SWEPT_NOTE, value: { runId: childId, state: "COMPLETED" } },
    });
    const { transitions } = await second.history(run.id);
    expect(transitions.filter((t) => t.from === "PAUSED").map((t) => [t.to, t.actor.kind, t.reason])).toEqual([
      [
        "RESUMING",
        "system",
        `child run ${childId} ended COMPLETED; its wait w2 was still open, resolved by the sweep of child waits`,
      ],
    ]);
    expect(transitions.at(-1)?.to).toBe("COMPLETED");
  });
});
