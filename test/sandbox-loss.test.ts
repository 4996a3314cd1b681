import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defineAgent, type SandboxExecResult, type SandboxSnapshot } from "../src/index.ts";
import { BubblewrapProvider, type DirectorySandbox, LocalSandboxProvider } from "../src/sandbox.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { sleepMarker, sleepPids, waitUntil } from "./helpers/sandbox-processes.ts";

/**
 * A sandbox lost under a run (DESIGN §4, *Sandboxes*), on the local provider: its workspace removed
 * mid-command (found by the missed heartbeat) or its processes killed with it (found when the
 * command ends); the next attempt restores the run's last snapshot into a new sandbox with the same
 * label and says so on the attempt. Without a snapshot the workflow gets `SandboxLostError` and
 * rebuilds it. `release()` leaves a paused run holding no sandbox; the next call restores it. The
 * worker's sweep destroys the sandboxes whose run has ended.
 */

let dir = "";
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairn-sbx-loss-"));
  // bubblewrap started by root runs as nobody, who must be able to enter the sandboxes folder.
  chmodSync(dir, 0o711);
});

const probe = mkdtempSync(join(tmpdir(), "cairn-sbx-probe-"));
chmodSync(probe, 0o711);
const bwrapSkip = await BubblewrapProvider.unavailable({ dir: probe });
rmSync(probe, { recursive: true, force: true });
if (bwrapSkip) console.warn(`bubblewrap loss tests skipped: ${bwrapSkip}`);
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const FAST = { initialIntervalMs: 10 };

const agent = defineAgent({
  name: "sbx_loss",
  tools: {},
  workflows: {
    async lossy(ctx, { marker, flags, flag }: { marker: string; flags: { host: string; path: string }; flag: string }) {
      // The test's flag folder is bound in (read-only), so the command sees the flag wherever it runs.
      const box = await ctx.sandbox("l", { mounts: [flags] });
      await box.writeFile("a.txt", "kept\n");
      const snap = await box.snapshot();
      const result = await box.exec(`cat a.txt; if [ -e "$FLAG" ]; then echo restored; exit 0; fi; sleep ${marker}`, {
        env: { FLAG: flag },
        heartbeatTimeoutMs: 600,
        retry: FAST,
      });
      return { snap, first: box.info.id, result };
    },
    async rebuild(ctx, marker: string) {
      const box = await ctx.sandbox("n");
      const before = box.info.id;
      try {
        return await box.exec(["sleep", marker], { heartbeatTimeoutMs: 600, retry: { maximumAttempts: 1 } });
      } catch (error) {
        const again = await ctx.sandbox("n");
        const fresh = await again.exec("ls | wc -l");
        return { caught: (error as Error).name, before, after: again.info.id, files: fresh.tail.trim() };
      }
    },
    async release(ctx, _input: null) {
      const box = await ctx.sandbox("r");
      await box.writeFile("a.txt", "through a release\n");
      const snap = await box.release();
      await ctx.waitForSignal("go");
      const result = await box.exec("cat a.txt");
      return { snap, result };
    },
    async held(ctx, _input: null) {
      const box = await ctx.sandbox("h");
      await box.exec("true");
      return ctx.waitForSignal("never");
    },
    async plain(_ctx, _input: null) {
      return 1;
    },
    async waits(ctx, _input: null) {
      return ctx.waitForSignal("never");
    },
  },
});

forEachBackend((under) => {
  const { runtimes } = under;
  describe("a lost sandbox", () => {
    for (const kind of ["local", "bubblewrap"] as const)
      for (const how of ["workspace removed (missed heartbeat)", "processes killed and workspace removed"]) {
        it.skipIf(kind === "bubblewrap" && bwrapSkip !== undefined)(
          `${kind}: is restored from the run's last snapshot: ${how}`,
          async () => {
            const provider =
              kind === "local"
                ? new LocalSandboxProvider({ dir: join(dir, "boxes") })
                : new BubblewrapProvider({ dir: join(dir, "boxes") });
            const rt = runtimes.make({ agents: [agent], sandbox: { provider, logDir: join(dir, "logs") } });
            const marker = sleepMarker();
            const flagDir = join(dir, "flags");
            mkdirSync(flagDir, { mode: 0o755 });
            const inside = kind === "local" ? flagDir : "/flags";
            const run = await rt.run(agent, "lossy", {
              marker,
              flags: { host: flagDir, path: inside },
              flag: `${inside}/flag`,
            });
            await waitUntil(() => sleepPids(marker).length === 1, 10_000, "the command to sleep");
            const [info] = await provider.list();
            const box = { workspace: ((await provider.find(info?.label as string)) as DirectorySandbox).hostWorkspace };
            writeFileSync(join(flagDir, "flag"), "");
            if (how.startsWith("processes")) {
              for (const pid of sleepPids(marker)) process.kill(pid, "SIGKILL");
            }
            rmSync(box.workspace, { recursive: true, force: true });
            const ended = await rt.waitFor(run.id, { timeoutMs: 20_000 });
            expect(ended.state).toBe("COMPLETED");
            const out = ended.output as unknown as { snap: SandboxSnapshot; first: string; result: SandboxExecResult };
            expect(out.result).toMatchObject({ exitCode: 0, tail: "kept\nrestored\n" });
            const { steps } = await rt.history(run.id);
            const exec = steps.find((s) => s.name === "exec:l");
            expect(exec?.attempts[0]?.error?.code).toBe("SANDBOX_LOST");
            if (!how.startsWith("processes"))
              expect(exec?.attempts[0]?.error?.message).toMatch(/no heartbeat for 600 ms/);
            const restored = exec?.attempts[1]?.restored;
            expect(restored).toMatchObject({ name: "l", lost: out.first, snapshot: out.snap.id });
            expect(restored?.id).not.toBe(out.first);
            expect(steps.at(-1)).toMatchObject({ name: "destroy:l", args: { cleanup: true, id: restored?.id } });
            expect(sleepPids(marker)).toEqual([]);
            expect(await provider.list()).toEqual([]);
            // The contract tells the story: the loss, the restore, the new id, the cleanup.
            const { isolation } = await rt.exportRun(run.id);
            expect(isolation.isolated).toBe(kind === "bubblewrap");
            expect(isolation.sandboxes).toHaveLength(1);
            const told = isolation.sandboxes[0];
            expect(told).toMatchObject({
              name: "l",
              label: `${run.id}/l`,
              info: { kind, isolated: kind === "bubblewrap", id: out.first },
              ids: [out.first, restored?.id],
              losses: [{ seq: exec?.seq, attempt: 1 }],
              restores: [{ seq: exec?.seq, attempt: 2, lost: out.first, snapshot: out.snap.id }],
              snapshots: [{ id: out.snap.id }],
              destroyedBy: "cleanup",
            });
            expect(told?.destroyedAt).not.toBeNull();
          },
        );
      }

    it("without a snapshot fails with SandboxLostError, and the workflow rebuilds it", async () => {
      const provider = new LocalSandboxProvider({ dir: join(dir, "boxes") });
      const rt = runtimes.make({ agents: [agent], sandbox: { provider, logDir: join(dir, "logs") } });
      const marker = sleepMarker();
      const run = await rt.run(agent, "rebuild", marker);
      await waitUntil(() => sleepPids(marker).length === 1, 10_000, "the command to sleep");
      const [box] = await provider.list();
      execFileSync("touch", [join(box?.workspace as string, "junk")]);
      rmSync(box?.workspace as string, { recursive: true, force: true });
      const ended = await rt.waitFor(run.id, { timeoutMs: 20_000 });
      expect(ended.state).toBe("COMPLETED");
      const out = ended.output as { caught: string; before: string; after: string; files: string };
      expect(out.caught).toBe("SandboxLostError");
      expect(out.after).not.toBe(out.before);
      expect(out.files).toBe("0");
      const { steps } = await rt.history(run.id);
      expect(steps.map((s) => [s.name, s.status])).toEqual([
        ["sandbox:n", "completed"],
        ["exec:n", "failed"],
        ["sandbox:n", "completed"],
        ["exec:n", "completed"],
        ["destroy:n", "completed"],
      ]);
      expect(sleepPids(marker)).toEqual([]);
    });

    it("release() leaves a paused run with no sandbox, and the next call restores it", async () => {
      const provider = new LocalSandboxProvider({ dir: join(dir, "boxes") });
      const rt = runtimes.make({ agents: [agent], sandbox: { provider, logDir: join(dir, "logs") } });
      const run = await rt.run(agent, "release", null);
      await waitUntil(async () => (await rt.getRun(run.id)).state === "PAUSED", 10_000, "the run to pause");
      expect(await provider.list()).toEqual([]);
      await rt.signal(run.id, "go", null);
      const ended = await rt.waitFor(run.id, { timeoutMs: 20_000 });
      expect(ended.state).toBe("COMPLETED");
      const out = ended.output as unknown as { snap: SandboxSnapshot; result: SandboxExecResult };
      expect(out.result.tail).toBe("through a release\n");
      const { steps } = await rt.history(run.id);
      const exec = steps.find((s) => s.name === "exec:r");
      expect(exec?.attempts).toHaveLength(1);
      expect(exec?.attempts[0]?.restored).toMatchObject({ name: "r", lost: null, snapshot: out.snap.id });
      expect(await provider.list()).toEqual([]);
    });
  });

  describe("a paused run", () => {
    it("cancelled while it holds a sandbox, ends with its sandbox destroyed by a cleanup step", async () => {
      const provider = new LocalSandboxProvider({ dir: join(dir, "boxes") });
      const rt = runtimes.make({ agents: [agent], sandbox: { provider, logDir: join(dir, "logs") } });
      const run = await rt.run(agent, "held", null);
      await waitUntil(async () => (await rt.getRun(run.id)).state === "PAUSED", 10_000, "the run to pause");
      expect((await provider.list()).map((i) => i.label)).toEqual([`${run.id}/h`]);
      await rt.cancel(run.id, { by: "ops", reason: "no longer needed" });
      const ended = await rt.waitFor(run.id, { timeoutMs: 20_000 });
      expect(ended.state).toBe("CANCELLED");
      expect(await provider.list()).toEqual([]);
      const { steps } = await rt.history(run.id);
      expect(steps.at(-1)).toMatchObject({ kind: "sandbox", name: "destroy:h", status: "completed" });
      expect((await rt.exportRun(run.id)).isolation.sandboxes[0]?.destroyedBy).toBe("cleanup");
    });
  });

  describe("the orphan sweep", () => {
    it("destroys the sandboxes whose run has ended, and no other", async () => {
      const provider = new LocalSandboxProvider({ dir: join(dir, "boxes") });
      const backend = under.backend();
      const rt = runtimes.make({ agents: [agent], backend, sandbox: { provider } });
      const ended = await rt.run(agent, "plain", null);
      expect((await rt.waitFor(ended.id, { timeoutMs: 10_000 })).state).toBe("COMPLETED");
      const waiting = await rt.run(agent, "waits", null);
      await waitUntil(async () => (await rt.getRun(waiting.id)).state === "PAUSED", 10_000, "the run to pause");
      await rt.shutdown();
      // Left behind as by a worker lost between destroying them and the run's end.
      await provider.create(`${ended.id}/stray`, {});
      await provider.create(`${waiting.id}/kept`, {});
      await provider.create("run-of-another-store/kept", {});
      const sweeper = runtimes.make({
        agents: [agent],
        backend,
        sandbox: { provider },
        worker: { leaseMs: 200, pollIntervalMs: 50 },
      });
      await sweeper.start();
      await waitUntil(async () => (await provider.list()).length === 2, 10_000, "the sweep");
      expect((await provider.list()).map((i) => i.label).sort()).toEqual(
        [`${waiting.id}/kept`, "run-of-another-store/kept"].sort(),
      );
    });
  });
});
