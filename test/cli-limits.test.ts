import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defineAgent, defineTool, Runtime, silentLogger } from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { cairn } from "./helpers/cli.ts";
import { until } from "./helpers/runtime-helpers.ts";

const dir = mkdtempSync(join(tmpdir(), "cairn-cli-limits-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("cairn show", () => {
  it("shows what the run's history and inbox hold against their limits", async () => {
    const db = join(dir, "limits.db");
    const agent = defineAgent({
      name: "holder",
      tools: { fetch: defineTool({ run: async () => "abc" }) },
      workflows: {
        async go(ctx, _input: { n: number }) {
          await ctx.tool("fetch", {});
          return ctx.waitForSignal("go");
        },
      },
    });
    const runtime = new Runtime({ agents: [agent], backend: new SqliteBackend({ path: db }), logger: silentLogger });
    let id = "";
    try {
      id = (await runtime.run(agent, "go", { n: 1 })).id;
      await until(async () => (await runtime.getRun(id)).state === "PAUSED", { what: "the run to pause" });
      await runtime.signal(id, "note", 1);
      await runtime.signal(id, "note", 2);
    } finally {
      await runtime.shutdown();
    }
    const shown = await cairn(["show", id, "--db", db]);
    expect(shown.stderr).toBe("");
    expect(shown.code).toBe(0);
    // Input {"n":1} (7 bytes), the tool's {} and "abc" (2 + 5), the wait's arguments (30); three
    // transitions (PENDING, RUNNING, PAUSED) and two steps.
    expect(shown.stdout).toContain(
      "  history   44 bytes of 50 MiB (52428800 bytes) (0 %, maxHistoryBytes), 5 of 50000 events (0 %, maxHistoryEvents), 2 of 10000 steps (maxSteps)\n",
    );
    expect(shown.stdout).toContain(
      "  inbox     2 unread of 1000 signals (maxUnreadSignals); past it a signal is refused\n",
    );
  });
});
