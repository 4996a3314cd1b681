import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  defineAgent,
  type Policy,
  type SandboxExecResult,
  type SandboxHandle,
  SandboxUnavailableError,
} from "../src/index.ts";
import { BubblewrapProvider, LocalSandboxProvider } from "../src/sandbox.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { sleepMarker, sleepPids, waitUntil } from "./helpers/sandbox-processes.ts";

/**
 * Sandboxes joined to the run (DESIGN §4, *Sandboxes*), on the local provider: `ctx.sandbox` and
 * every call of its handle are steps; the run's end destroys its sandboxes with a cleanup step; a
 * cancel kills a running command's tree; the journal keeps kilobytes of a command printing 20 MB.
 */

let dir = "";
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cairn-sbx-runs-"));
  // bubblewrap started by root runs as nobody, who must be able to enter the sandboxes folder.
  chmodSync(dir, 0o711);
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const probe = mkdtempSync(join(tmpdir(), "cairn-sbx-probe-"));
chmodSync(probe, 0o711);
const bwrapSkip = await BubblewrapProvider.unavailable({ dir: probe });
rmSync(probe, { recursive: true, force: true });
if (bwrapSkip) console.warn(`bubblewrap runs skipped: ${bwrapSkip}`);

type Kind = "local" | "bubblewrap";
const sandboxOption = (kind: Kind = "local") => ({
  provider:
    kind === "local"
      ? new LocalSandboxProvider({ dir: join(dir, "boxes") })
      : new BubblewrapProvider({ dir: join(dir, "boxes") }),
  logDir: join(dir, "logs"),
});

const agent = defineAgent({
  name: "sbx_runs",
  tools: {},
  workflows: {
    async lifecycle(ctx, _input: null) {
      const box = await ctx.sandbox("main");
      await box.writeFile("hello.txt", "hi there\n");
      const cat = await box.exec("cat hello.txt; echo oops >&2; exit 3");
      const read = await box.readFile("hello.txt");
      const snap = await box.snapshot();
      return { info: box.info, cat, read, snap };
    },
    async loud(ctx, _input: null) {
      const box = await ctx.sandbox("loud");
      // ~20 MB of output: 200,000 lines of 100 characters.
      return box.exec(`head -c 20000000 /dev/zero | tr '\\0' 'x' | fold -w 99`);
    },
    async sleeper(ctx, marker: string) {
      const box = await ctx.sandbox("s");
      return box.exec(["sleep", marker]);
    },
    async timeout(ctx, marker: string) {
      const box = await ctx.sandbox("t");
      return box.exec(["sleep", marker], { timeoutMs: 300, retry: { maximumAttempts: 1 } });
    },
    async noProvider(ctx, _input: null) {
      const box: SandboxHandle = await ctx.sandbox("none");
      return box.info;
    },
  },
});

forEachBackend((under) => {
  const { runtimes } = under;
  describe("sandboxes joined to the run", () => {
    for (const kind of ["local", "bubblewrap"] as const) {
      it.skipIf(kind === "bubblewrap" && bwrapSkip !== undefined)(
        `${kind}: records ctx.sandbox and each call as a sandbox step, and destroys the sandbox at the end`,
        async () => {
          const sandbox = sandboxOption(kind);
          const rt = runtimes.make({ agents: [agent], sandbox });
          const run = await rt.run(agent, "lifecycle", null);
          const ended = await rt.waitFor(run.id, { timeoutMs: 20_000 });
          expect(ended.state).toBe("COMPLETED");
          const out = ended.output as unknown as {
            info: { label: string; isolated: boolean };
            cat: SandboxExecResult;
            read: string;
          };
          expect(out.info).toMatchObject({ label: `${run.id}/main`, kind, isolated: kind === "bubblewrap" });
          expect(out.cat).toMatchObject({ exitCode: 3, signal: null, tail: expect.stringContaining("hi there") });
          expect(out.cat.tail).toContain("oops");
          expect(out.read).toBe("hi there\n");
          expect(readFileSync(out.cat.logPath as string, "utf8")).toContain("hi there");
          expect(out.cat.logPath).toBe(join(sandbox.logDir, run.id, "3.1.log"));
          const { steps } = await rt.history(run.id);
          expect(steps.map((s) => [s.seq, s.kind, s.name, s.status])).toEqual([
            [1, "sandbox", "sandbox:main", "completed"],
            [2, "sandbox", "writeFile:main", "completed"],
            [3, "sandbox", "exec:main", "completed"],
            [4, "sandbox", "readFile:main", "completed"],
            [5, "sandbox", "snapshot:main", "completed"],
            [6, "sandbox", "destroy:main", "completed"],
          ]);
          expect(steps[5]?.args).toMatchObject({ cleanup: true });
          // The command's output went to the run's live events as it arrived.
          const streamed: string[] = [];
          for await (const event of rt.events(run.id)) {
            if (event.type === "sandbox.output") {
              expect(event).toMatchObject({ seq: 3, attempt: 1, sandbox: "main" });
              streamed.push(event.text);
            }
          }
          expect(streamed.join("")).toContain("hi there");
          expect(streamed.join("")).toContain("oops");
          expect(await sandbox.provider.list()).toEqual([]);
          expect(await sandbox.provider.find(`${run.id}/main`)).toBeUndefined();
        },
      );

      it.skipIf(kind === "bubblewrap" && bwrapSkip !== undefined)(
        `${kind}: kills a running command's tree on cancel and destroys the sandbox`,
        async () => {
          const sandbox = sandboxOption(kind);
          const rt = runtimes.make({ agents: [agent], sandbox });
          const marker = sleepMarker();
          const run = await rt.run(agent, "sleeper", marker);
          await waitUntil(() => sleepPids(marker).length === 1, 10_000, "the sleep to start");
          const pid = sleepPids(marker)[0] as number;
          await rt.cancel(run.id, { by: "ops", reason: "enough" });
          const ended = await rt.waitFor(run.id, { timeoutMs: 20_000 });
          expect(ended.state).toBe("CANCELLED");
          expect(alive(pid)).toBe(false);
          expect(sleepPids(marker)).toEqual([]);
          expect(await sandbox.provider.list()).toEqual([]);
          const { steps } = await rt.history(run.id);
          expect(steps.map((s) => [s.name, s.status])).toEqual([
            ["sandbox:s", "completed"],
            ["exec:s", "failed"],
            ["destroy:s", "completed"],
          ]);
        },
      );
    }

    it("keeps kilobytes in the journal of a command that prints 20 MB, and the whole output in its log", async () => {
      const sandbox = sandboxOption();
      const rt = runtimes.make({ agents: [agent], sandbox });
      const run = await rt.run(agent, "loud", null);
      const ended = await rt.waitFor(run.id, { timeoutMs: 60_000 });
      expect(ended.state).toBe("COMPLETED");
      const result = ended.output as unknown as SandboxExecResult;
      expect(result.exitCode).toBe(0);
      // fold puts a newline between lines of 99 (none after the last, partial one).
      expect(result.outputBytes).toBe(20_000_000 + Math.floor(20_000_000 / 99));
      expect(statSync(result.logPath as string).size).toBe(result.outputBytes);
      const { steps } = await rt.history(run.id);
      const exec = steps.find((s) => s.name === "exec:loud");
      const stored = JSON.stringify(exec).length;
      expect(stored).toBeLessThan(8 * 1024);
      expect(result.tail.length).toBeLessThanOrEqual(4096);
    });

    for (const kind of ["local", "bubblewrap"] as const)
      it.skipIf(kind === "bubblewrap" && bwrapSkip !== undefined)(
        `${kind}: kills the command's tree when the step times out`,
        async () => {
          const sandbox = sandboxOption(kind);
          const rt = runtimes.make({ agents: [agent], sandbox });
          const marker = sleepMarker();
          const run = await rt.run(agent, "timeout", marker);
          const ended = await rt.waitFor(run.id, { timeoutMs: 20_000 });
          expect(ended.state).toBe("FAILED");
          expect(ended.error?.code).toBe("STEP_TIMEOUT");
          await waitUntil(() => sleepPids(marker).length === 0, 5000, "the sleep to be killed");
          expect(await sandbox.provider.list()).toEqual([]);
        },
      );

    it("shows sandbox calls to policies as kind sandbox, with the call's arguments", async () => {
      const seen: string[] = [];
      const policy: Policy = {
        name: "no_rm",
        version: "1",
        check: (call) => {
          if (call.kind === "sandbox") seen.push(`${call.name} ${JSON.stringify(call.args)}`);
          return "allow";
        },
      };
      const rt = runtimes.make({ agents: [agent], sandbox: sandboxOption(), policies: [policy] });
      const run = await rt.run(agent, "lifecycle", null);
      expect((await rt.waitFor(run.id, { timeoutMs: 20_000 })).state).toBe("COMPLETED");
      expect(seen[0]).toBe('sandbox:main {"name":"main","spec":{}}');
      expect(seen).toContain('exec:main {"command":"cat hello.txt; echo oops >&2; exit 3"}');
    });

    it("says NOT ISOLATED in the log line that makes a local sandbox", async () => {
      const warnings: string[] = [];
      const logger = { debug() {}, info() {}, warn: (m: string) => warnings.push(m), error() {} };
      const rt = runtimes.make({ agents: [agent], sandbox: sandboxOption(), logger });
      const run = await rt.run(agent, "lifecycle", null);
      expect((await rt.waitFor(run.id, { timeoutMs: 20_000 })).state).toBe("COMPLETED");
      expect(warnings).toContain(`sandbox "main" of run ${run.id} is NOT ISOLATED (local provider)`);
    });

    it("fails ctx.sandbox with an error naming the runtime option when there is no provider", async () => {
      const rt = runtimes.make({ agents: [agent] });
      const run = await rt.run(agent, "noProvider", null);
      const ended = await rt.waitFor(run.id, { timeoutMs: 20_000 });
      expect(ended.state).toBe("FAILED");
      expect(ended.error?.code).toBe(new SandboxUnavailableError("x").code);
      expect(ended.error?.message).toMatch(/new Runtime\(\{ sandbox: \{ provider/);
    });
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
