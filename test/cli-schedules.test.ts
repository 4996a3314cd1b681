import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { Runtime, silentLogger } from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { cairn } from "./helpers/cli.ts";

const dir = mkdtempSync(join(tmpdir(), "cairn-cli-schedules-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("cairn schedules", () => {
  it("lists, shows, pauses, resumes, triggers and deletes the schedules of a database", async () => {
    const db = join(dir, "schedules.db");
    const runtime = new Runtime({
      agents: [],
      backend: new SqliteBackend({ path: db }),
      logger: silentLogger,
      worker: false,
    });
    try {
      await runtime.start();
      await runtime.schedule({
        id: "nightly",
        agent: "reports",
        workflow: "build",
        cron: "30 2 * * *",
        timeZone: "Asia/Tokyo",
      });
      await runtime.schedule({ id: "poll", agent: "reports", workflow: "poll", every: "5m", overlap: "bufferOne" });
    } finally {
      await runtime.shutdown();
    }
    const list = await cairn(["schedules", "--db", db]);
    expect(list.stderr).toBe("");
    expect(list.stdout).toMatch(/nightly\s+reports\/build\s+30 2 \* \* \* Asia\/Tokyo\s+active/);
    expect(list.stdout).toMatch(/poll\s+reports\/poll\s+every 300s\s+active/);

    const shown = await cairn(["schedules", "show", "nightly", "--db", db]);
    expect(shown.code).toBe(0);
    const times = shown.stdout.split("\n").filter((line) => /^ {4}\d{4}-/.test(line));
    expect(times).toHaveLength(10);
    // 02:30 in Tokyo is 17:30 UTC the day before.
    expect(times.every((line) => line.includes("T17:30:00.000Z"))).toBe(true);
    // Never ticked: the last tick and the last run are two facts, both none yet.
    expect(shown.stdout).toContain("  last tick none; last run none");

    expect((await cairn(["schedules", "pause", "poll", "--db", db])).stdout).toContain("schedule poll paused");
    expect((await cairn(["schedules", "list", "--db", db])).stdout).toMatch(
      /poll\s+reports\/poll\s+every 300s\s+paused/,
    );
    expect((await cairn(["schedules", "resume", "poll", "--db", db])).stdout).toContain(
      "schedule poll resumed; next tick",
    );
    const triggered = await cairn(["schedules", "trigger", "poll", "--db", db]);
    expect(triggered.stdout).toContain("a worker running its agent starts the run (key schedule:poll@");
    expect((await cairn(["schedules", "delete", "poll", "--db", db])).stdout).toContain("schedule poll deleted");
    const gone = await cairn(["schedules", "show", "poll", "--db", db]);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain('no schedule with id "poll"');
    const bad = await cairn(["schedules", "frobnicate", "--db", db]);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('unknown action "frobnicate"');
  }, 120_000);
});
