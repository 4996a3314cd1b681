import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/main.ts";
import { defineAgent, Runtime, silentLogger } from "../src/index.ts";
import { LocalSandboxProvider } from "../src/sandbox.ts";
import { SqliteBackend } from "../src/sqlite.ts";

/**
 * The operator's view of sandboxes (DESIGN §4, *Sandboxes*): `cairn sandboxes` lists the ones that
 * exist with their runs and the runs' states; `cairn show` lists a run's sandboxes and says loudly
 * that a local one is NOT ISOLATED; once the run ends both say it is gone.
 */

const root = mkdtempSync(join(tmpdir(), "cairn-sbx-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function cairn(args: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await main(args, { out: (l = "") => lines.push(l), err: (l = "") => lines.push(l) });
  return { code, out: lines.join("\n") };
}

const agent = defineAgent({
  name: "sbx_cli",
  tools: {},
  workflows: {
    async held(ctx, _input: null) {
      const box = await ctx.sandbox("work", { env: { TOKEN: "not-shown" } });
      await box.exec("true");
      await ctx.waitForSignal("go");
      return box.info.id;
    },
  },
});

describe("cairn sandboxes and cairn show", { timeout: 60_000 }, () => {
  it("list a live sandbox with its run, NOT ISOLATED, and nothing once the run ended", async () => {
    const db = join(root, "cairn.db");
    const dir = join(root, "boxes");
    const rt = new Runtime({
      agents: [agent],
      backend: new SqliteBackend({ path: db }),
      logger: silentLogger,
      sandbox: { provider: new LocalSandboxProvider({ dir }), logDir: join(root, "logs") },
    });
    try {
      const run = await rt.run(agent, "held", null);
      for (let i = 0; i < 500 && (await rt.getRun(run.id)).state !== "PAUSED"; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      const live = await cairn(["sandboxes", "--dir", dir, "--db", db]);
      expect(live.code, live.out).toBe(0);
      expect(live.out).toContain("sandboxes (1)");
      expect(live.out).toMatch(new RegExp(`local: NOT ISOLATED\\s+${run.id}\\s+work\\s+PAUSED`));

      const shown = await cairn(["show", run.id, "--db", db]);
      expect(shown.code, shown.out).toBe(0);
      expect(shown.out).toContain("sandboxes (1)");
      expect(shown.out).toMatch(/work\s+sbx-\S+\s+local: NOT ISOLATED\s+on\s+none\s+0\/0\s+not destroyed/);
      expect(shown.out).toContain("!! NOT ISOLATED");
      expect(shown.out).not.toContain("not-shown");

      await rt.signal(run.id, "go", null);
      expect((await rt.waitFor(run.id, { timeoutMs: 20_000 })).state).toBe("COMPLETED");
      const after = await cairn(["sandboxes", "--dir", dir, "--db", db]);
      expect(after.out).toContain("sandboxes (0)");
      const ended = await cairn(["show", run.id, "--db", db]);
      expect(ended.out).toMatch(/work\s+sbx-\S+\s+local: NOT ISOLATED.*cleanup \d\d:\d\d:\d\d/);
    } finally {
      await rt.shutdown();
    }
  });
});
