import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SqliteBackend } from "../src/sqlite.ts";
import { FakeModelServer } from "./helpers/fake-model-server.ts";
import { RECOVERED_PATH } from "./helpers/paths.ts";

/**
 * A process SIGKILLed while a model call is in flight: a child runs a workflow of three model
 * calls (real `@ai-sdk/openai` provider, SQLite journal) against the fake model server in this
 * process; the second call's answer is slow, and the child is killed once the server has that
 * request. A fresh child resumes the run: the first answer comes from the journal (not asked
 * again), the second call is sent again (its answer was never recorded), the third once.
 */

const CHILD = join(import.meta.dirname, "model-crash", "model-crash-child.ts");
const root = mkdtempSync(join(tmpdir(), "cairn-model-crash-"));
let server: FakeModelServer;
beforeAll(async () => {
  server = await FakeModelServer.start();
});
afterAll(async () => {
  await server.close();
  rmSync(root, { recursive: true, force: true });
});

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
    const timer = setTimeout(() => proc.kill("SIGKILL"), 40_000);
    proc.on("error", reject);
    proc.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { proc, done };
}

describe("SIGKILL during a model call", { timeout: 60_000 }, () => {
  it("a fresh process re-sends only the call in flight, and the run completes", async () => {
    let secondAsked = 0;
    server.respond((request) => {
      if (request.prompt === "first") return { text: "one" };
      if (request.prompt === "second") {
        // The first time, slow enough that the process is killed before the answer is in.
        return ++secondAsked === 1 ? { kind: "slow", delayMs: 5000, text: "two (never arrives)" } : { text: "two" };
      }
      if (request.prompt === "third") return { text: "three" };
      return { status: 400, message: `unexpected prompt ${JSON.stringify(request.prompt)}` };
    });
    const db = join(root, "cairn.db");

    const first = child([db, server.url, "start"]);
    await server.waitForRequests(1, { where: (r) => r.prompt === "second", timeoutMs: 30_000 });
    first.proc.kill("SIGKILL");
    const killed = await first.done;
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    expect(server.requests.map((r) => r.prompt)).toEqual(["first", "second"]);

    const second = await child([db, server.url, "resume"]).done;
    expect(second.code, second.stderr).toBe(0);
    const result = JSON.parse(second.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(result.state).toBe("COMPLETED");
    expect(result.output).toEqual(["one", "two", "three"]);

    // Exactly: the answered call is not asked again, the one in flight is, the last once.
    expect(server.requests.map((r) => r.prompt)).toEqual(["first", "second", "second", "third"]);
    expect(server.requestsFor("first")).toHaveLength(1);
    expect(server.requestsFor("second")).toHaveLength(2);
    expect(server.requestsFor("third")).toHaveLength(1);

    const backend = new SqliteBackend({ path: db });
    await backend.init();
    try {
      const steps = await backend.loadSteps(result.runId);
      expect(steps.map((s) => [s.kind, s.status])).toEqual([
        ["llm", "completed"],
        ["llm", "completed"],
        ["llm", "completed"],
      ]);
      // The killed attempt is closed as interrupted; it counts against the call's attempts.
      expect(steps.map((s) => s.attempts.map((a) => a.error?.name ?? "ok"))).toEqual([
        ["ok"],
        ["AttemptInterrupted", "ok"],
        ["ok"],
      ]);
      expect(steps.map((s) => s.usage?.modelCalls)).toEqual([1, 1, 1]);
      const transitions = await backend.listTransitions(result.runId);
      expect(transitions.map((t) => `${t.from ?? "-"}>${t.to}`)).toEqual(RECOVERED_PATH);
    } finally {
      await backend.close();
    }
  });
});
