import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  AlreadyDecidedError,
  defineAgent,
  defineTool,
  RunNotCompletedError,
  Runtime,
  silentLogger,
  WaitClosedError,
} from "../src/index.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { deferred, forever } from "./helpers/runtime-helpers.ts";
import { payAgent } from "./invariants/effect-agent.ts";

/**
 * The invariants of DESIGN §3, one test each: no COMPLETED run with a pending approval or an
 * unresolved effect; every retry refers to the same logical effect; a killed worker leaves a
 * durable last transition and a named owner for its in-flight effect; a resumed run checks its
 * versions; cancellation records before/after/unknown; compensation only through declared
 * operations; acceptance apart from completion.
 */

const fast = { initialIntervalMs: 1, maximumIntervalMs: 2, jitter: 0 };

forEachBackend((under) => {
  const { runtimes } = under;

  describe("invariants", () => {
    it("no COMPLETED with a pending approval: an approval the workflow left open is closed with the run", async () => {
      const agent = defineAgent({
        name: "forgetful",
        tools: {},
        workflows: {
          async go(ctx, _input: null) {
            void ctx.requestApproval({ action: "ship", payload: { box: 1 }, expiresInMs: 60_000 }).catch(() => {});
            return "done";
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("forgetful", "go", null);
      expect(await handle.result()).toBe("done");
      const waits = await rt.waits(handle.id);
      expect(waits.filter((w) => w.status === "open")).toEqual([]);
      for (const w of waits.filter((x) => x.kind === "approval")) {
        await expect(rt.approve(handle.id, w.id, { by: "x", digest: "sha256:0" })).rejects.toThrow(WaitClosedError);
      }
    });

    it("no COMPLETED with an unresolved effect: an effect the workflow did not await is settled first", async () => {
      let finish!: () => void;
      const slow = new Promise<void>((r) => (finish = r));
      const agent = defineAgent({
        name: "hasty",
        tools: {
          send: defineTool({
            effect: { idempotent: true },
            run: async () => {
              await slow;
              return "sent";
            },
          }),
        },
        workflows: {
          async go(ctx, _input: null) {
            void ctx.tool("send", {});
            return "returned early";
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("hasty", "go", null);
      await new Promise((r) => setTimeout(r, 50));
      expect((await rt.getRun(handle.id)).state).toBe("RUNNING");
      finish();
      expect(await handle.result()).toBe("returned early");
      const step = (await rt.history(handle.id)).steps.find((s) => s.name === "send");
      expect(step?.effect?.status).toBe("applied");
    });

    it("every retry refers to the same logical effect: one effect record, one key, every attempt", async () => {
      const keys: string[] = [];
      const agent = defineAgent({
        name: "retrier",
        tools: {
          charge: defineTool({
            retry: { ...fast, maximumAttempts: 4 },
            effect: { idempotent: true },
            run: async (ctx) => {
              keys.push(ctx.idempotencyKey);
              if (ctx.attempt < 3) throw new Error("gateway timeout");
              return ctx.attempt;
            },
          }),
        },
        workflows: {
          async go(ctx, _input: null) {
            return ctx.tool("charge", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("retrier", "go", null);
      expect(await handle.result()).toBe(3);
      const steps = (await rt.history(handle.id)).steps.filter((s) => s.effect);
      expect(steps).toHaveLength(1);
      expect(steps[0]?.attempts).toHaveLength(3);
      expect(new Set(keys)).toEqual(new Set([steps[0]?.effect?.idempotencyKey]));
    });

    it("a resumed run checks its versions: code that does not accept the run's version fails it loudly", async () => {
      const v1 = defineAgent({
        name: "versioned",
        version: "1",
        tools: {},
        workflows: {
          async go(ctx, _input: null) {
            return ctx.waitForSignal("next");
          },
        },
      });
      const backend = under.backend();
      const old = runtimes.make({ agents: [v1], backend });
      const handle = await old.run("versioned", "go", null);
      while ((await old.getRun(handle.id)).state !== "PAUSED") await new Promise((r) => setTimeout(r, 10));
      await old.shutdown();
      const v2 = defineAgent({ ...v1, name: "versioned", version: "2" });
      const fresh = runtimes.make({ agents: [v2], backend });
      await fresh.signal(handle.id, "next", 1);
      const run = await fresh.waitFor(handle.id);
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("VERSION_MISMATCH");
    });

    it("cancellation records whether the run stopped before, after or during a step", async () => {
      const running = deferred();
      const agent = defineAgent({
        name: "cancel_evidence",
        tools: {
          hang: defineTool({
            run: () => {
              running.resolve();
              return forever;
            },
          }),
        },
        workflows: {
          async go(ctx, _input: null) {
            return ctx.tool("hang", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent], worker: { cancelGraceMs: 50 } });
      const handle = await rt.run("cancel_evidence", "go", null);
      // Cancelled while the tool runs (its start record alone could be committed before it does).
      await running.promise;
      await rt.cancel(handle.id, { by: "ops", reason: "stuck" });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("CANCELLED");
      expect(run.error?.data).toMatchObject({ stopped: "during_step" });
    });

    it("compensation goes only through declared operations", async () => {
      const done: string[] = [];
      const agent = defineAgent({
        name: "declared_only",
        compensate: "on_failure",
        tools: {
          plain: defineTool({ run: async () => done.push("plain") }),
          undeclared: defineTool({ effect: { idempotent: true }, run: async () => done.push("undeclared") }),
          declared: defineTool({
            effect: { idempotent: true, compensate: "undo" },
            run: async () => done.push("declared"),
          }),
          undo: defineTool({ effect: { idempotent: true }, run: async () => done.push("undo") }),
          boom: defineTool({
            retry: { maximumAttempts: 1 },
            run: async () => {
              throw new Error("boom");
            },
          }),
        },
        workflows: {
          async go(ctx, _input: null) {
            await ctx.tool("plain", {});
            await ctx.tool("undeclared", {});
            await ctx.tool("declared", {});
            await ctx.tool("boom", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const run = await rt.waitFor((await rt.run("declared_only", "go", null)).id);
      expect(run.state).toBe("COMPENSATED");
      expect(done).toEqual(["plain", "undeclared", "declared", "undo"]);
    });

    it("acceptance is apart from completion: a verdict changes no state and writes no transition", async () => {
      const agent = defineAgent({
        name: "reviewed_job",
        tools: {},
        workflows: {
          async go(_ctx, input: { fail: boolean }) {
            if (input.fail) throw new Error("no");
            return "report";
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const ok = await rt.run("reviewed_job", "go", { fail: false });
      await ok.result();
      const before = (await rt.history(ok.id)).transitions;
      const accepted = await rt.accept(ok.id, { by: "erin", note: "numbers check out" });
      expect(accepted.state).toBe("COMPLETED");
      expect(accepted.acceptance).toMatchObject({
        decision: "accepted",
        by: { id: "erin" },
        note: "numbers check out",
      });
      expect((await rt.history(ok.id)).transitions).toEqual(before);
      await expect(rt.reject(ok.id, { by: "frank" })).rejects.toThrow(AlreadyDecidedError);
      const bad = await rt.run("reviewed_job", "go", { fail: true });
      await rt.waitFor(bad.id);
      await expect(rt.accept(bad.id, { by: "erin" })).rejects.toThrow(RunNotCompletedError);
    });
  });
});

describe("invariants across a killed process", () => {
  const root = mkdtempSync(join(tmpdir(), "cairn-invariants-"));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it("a worker killed inside an effect leaves a durable last transition and a named owner; recovery settles the effect once", async () => {
    const db = join(root, "kill.db");
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(import.meta.dirname, "invariants", "kill-in-effect.ts"), db, root],
      {
        env: { ...process.env, CAIRN_KILL_IN_EFFECT: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const ended = await new Promise<{ signal: NodeJS.Signals | null; pid: number | undefined }>((resolve) =>
      child.on("close", (_code, signal) => resolve({ signal, pid: child.pid })),
    );
    expect(ended.signal).toBe("SIGKILL");

    const backend = new SqliteBackend({ path: db });
    await backend.init();
    const [left] = await backend.listRuns({ agent: "payer" });
    if (!left) throw new Error("no run");
    // What the dead worker left: its last transition is durable and it is named as the owner.
    expect(left.state).toBe("RUNNING");
    expect(left.leaseOwner).toMatch(new RegExp(`:${ended.pid}:`));
    const transitions = await backend.listTransitions(left.id);
    expect(transitions.at(-1)).toMatchObject({ to: "RUNNING", actor: { id: left.leaseOwner } });
    const [step] = await backend.loadSteps(left.id);
    expect(step?.effect).toMatchObject({ status: "intended", idempotencyKey: `payer/pay:${left.id}:1` });
    expect(step?.attempts.at(-1)?.endedAt).toBeNull();
    await backend.close();

    const rt = new Runtime({
      agents: [payAgent(root)],
      backend: new SqliteBackend({ path: db }),
      logger: silentLogger,
      worker: { pollIntervalMs: 20 },
    });
    try {
      await rt.start();
      let run = await rt.waitFor(left.id, { timeoutMs: 20_000 });
      while (run.state === "INTERRUPTED") run = await rt.waitFor(left.id, { timeoutMs: 20_000 });
      expect(run.state).toBe("COMPLETED");
      expect(run.output).toEqual({ paid: true, cents: 250 });
      const history = await rt.history(left.id);
      expect(history.transitions.find((t) => t.to === "INTERRUPTED")?.reason).toContain(left.leaseOwner as string);
      expect(history.steps[0]?.effect).toMatchObject({ status: "applied", settledBy: "status" });
      // Applied once: the ledger outside the database holds the key once.
      const lines = readFileSync(join(root, "ledger.txt"), "utf8").trim().split("\n");
      expect(lines).toEqual([`payer/pay:${left.id}:1`]);
    } finally {
      await rt.shutdown();
    }
  }, 60_000);
});
