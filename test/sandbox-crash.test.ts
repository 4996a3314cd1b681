import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BubblewrapProvider, LocalSandboxProvider } from "../src/sandbox.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { sleepMarker, sleepPids, waitUntil } from "./helpers/sandbox-processes.ts";

/**
 * A worker SIGKILLed while a sandbox command runs (DESIGN §4, *Sandboxes*): a child process runs a
 * workflow whose command sleeps in the sandbox, and is killed once the sleep is there. A fresh
 * process recovers the run: the `sandbox:work` step is replayed (the same sandbox, found by its
 * label), the interrupted exec runs again in it (the workspace still holds what the first attempt
 * wrote) and the run completes; afterwards no sandbox and no sandbox process is left.
 */

const CHILD = join(import.meta.dirname, "sandbox-crash", "sandbox-crash-child.ts");
const root = mkdtempSync(join(tmpdir(), "cairn-sbx-crash-"));
// bubblewrap started by root runs as nobody, who must be able to enter the sandboxes folder.
chmodSync(root, 0o711);
afterAll(() => rmSync(root, { recursive: true, force: true }));

const probe = join(root, "probe");
mkdirSync(probe, { mode: 0o711 });
const bwrapSkip = await BubblewrapProvider.unavailable({ dir: probe });
if (bwrapSkip) console.warn(`bubblewrap crash test skipped: ${bwrapSkip}`);

/** Commands the sandboxes folder records as running (`procs/<id>/<pid>`). */
function recordedCommands(boxes: string): number {
  const procs = join(boxes, "procs");
  if (!existsSync(procs)) return 0;
  return readdirSync(procs).reduce((n, id) => n + readdirSync(join(procs, id)).length, 0);
}

interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function child(args: string[]): { proc: ChildProcess; done: Promise<ChildResult> } {
  const proc = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  const done = new Promise<ChildResult>((resolve, reject) => {
    let stdout = "";
    let stderr = "";
    proc.stdout?.on("data", (d) => (stdout += d));
    proc.stderr?.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
    proc.on("error", reject);
    proc.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { proc, done };
}

describe("SIGKILL of a worker while a sandbox command runs", { timeout: 120_000 }, () => {
  for (const kind of ["local", "bubblewrap"] as const) {
    it.skipIf(kind === "bubblewrap" && bwrapSkip !== undefined)(
      `${kind}: a fresh worker finds the sandbox by its label and finishes; nothing is left`,
      async () => {
        const dir = join(root, kind);
        mkdirSync(dir, { mode: 0o711 });
        const db = join(dir, "cairn.db");
        const marker = sleepMarker();

        const first = child([db, dir, kind, marker, "start"]);
        await waitUntil(() => sleepPids(marker).length > 0, 30_000, "the command to sleep in the sandbox");
        // Killed once the provider has recorded the command (procs/<id>/<pid>): a local command whose
        // worker dies between its spawn and that record is not known to a later destroy (bubblewrap's
        // --die-with-parent ends it anyway). That window is the provider's, not this test's subject.
        await waitUntil(() => recordedCommands(join(dir, "boxes")) > 0, 30_000, "the command's record");
        first.proc.kill("SIGKILL");
        const killed = await first.done;
        expect(killed.signal, killed.stderr).toBe("SIGKILL");

        const second = await child([db, dir, kind, marker, "resume"]).done;
        expect(second.code, second.stderr).toBe(0);
        const ended = JSON.parse(second.stdout.trim().split("\n").at(-1) ?? "{}");
        expect(ended.state).toBe("COMPLETED");
        expect(ended.output.result).toMatchObject({ exitCode: 0 });
        expect(ended.output.result.tail).toBe("from the first worker\nagain\n");

        const backend = new SqliteBackend({ path: db });
        await backend.init();
        const steps = await backend.loadSteps(ended.runId);
        await backend.close();
        expect(steps.map((s) => [s.name, s.status])).toEqual([
          ["sandbox:work", "completed"],
          ["writeFile:work", "completed"],
          ["exec:work", "completed"],
          ["destroy:work", "completed"],
        ]);
        // Made once: the recovered run found it by its label, and nothing had to be restored.
        expect(steps[0]?.attempts).toHaveLength(1);
        const exec = steps[2];
        expect(exec?.attempts.map((a) => a.error?.name ?? "ok")).toEqual(["AttemptInterrupted", "ok"]);
        expect(exec?.attempts.some((a) => a.restored)).toBe(false);
        expect(steps[3]?.args).toMatchObject({ cleanup: true, id: ended.output.info.id });

        const boxes = join(dir, "boxes");
        const provider =
          kind === "local" ? new LocalSandboxProvider({ dir: boxes }) : new BubblewrapProvider({ dir: boxes });
        expect(await provider.list()).toEqual([]);
        await waitUntil(() => sleepPids(marker).length === 0, 5000, "no sandbox process left");
      },
    );
  }
});
