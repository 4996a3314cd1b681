import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import { RunNotResumableError } from "../src/core/errors.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { cairn } from "./helpers/cli.ts";

/**
 * A PENDING run claimed by a worker that died before recording RUNNING (DESIGN §4, leases): a
 * worker on the same host sees that the claiming process is gone and takes the claim over at
 * once, and `resume` (the runtime's and `cairn resume`) takes it up instead of refusing a PENDING
 * run. The lost worker is a real process that has exited; its lease is ten minutes long, so a
 * worker that waited it out would time the test out.
 */

/** A worker id of this host whose process has exited. */
function goneWorkerId(): string {
  const child = spawnSync(process.execPath, ["-e", ""]);
  return `${hostname()}:${child.pid}:dead00`;
}

const LONG_LEASE = 10 * 60_000;

function echo() {
  return defineAgent({
    name: "echo",
    tools: { upper: defineTool({ run: (_ctx, { s }: { s: string }) => s.toUpperCase() }) },
    workflows: {
      async shout(ctx, { s }: { s: string }) {
        return ctx.tool("upper", { s });
      },
    },
  });
}

forEachBackend((under) => {
  describe("a claim whose worker is gone", () => {
    it("is taken over at once by a worker of the same host, which records it RUNNING and runs it", async () => {
      const store = under.backend();
      const client = under.runtimes.make({ agents: [echo()], backend: store, worker: false });
      const run = await client.run("echo", "shout", { s: "hi" });
      const lost = goneWorkerId();
      const claimed = await store.claimRun({ workerId: lost, now: Date.now(), leaseMs: LONG_LEASE, runId: run.id });
      expect(claimed?.leaseOwner).toBe(lost);

      const worker = under.runtimes.make({ agents: [echo()], backend: store, worker: { pollIntervalMs: 50 } });
      await worker.start();
      const ended = await client.waitFor(run.id, { timeoutMs: 20_000 });
      expect(ended.state).toBe("COMPLETED");
      expect(ended.output).toBe("HI");
      const transitions = await store.listTransitions(run.id);
      expect(transitions.map((t) => t.to)).toEqual(["PENDING", "RUNNING", "COMPLETED"]);
      expect(transitions[1]?.actor.id).toBe(worker.workerId);
    });

    it("a live claim is not taken over: its epoch or owner must still be the lost one's", async () => {
      const store = under.backend();
      const client = under.runtimes.make({ agents: [echo()], backend: store, worker: false });
      const run = await client.run("echo", "shout", { s: "hi" });
      const lost = goneWorkerId();
      const first = await store.claimRun({ workerId: lost, now: Date.now(), leaseMs: LONG_LEASE, runId: run.id });
      const request = { workerId: "w2", now: Date.now(), leaseMs: 1000, runId: run.id };
      // Wrong epoch, wrong owner: refused; the owner and epoch it holds: taken.
      expect(await store.claimRun({ ...request, takeover: { epoch: 99, leaseOwner: lost } })).toBeUndefined();
      expect(await store.claimRun({ ...request, takeover: { epoch: first?.epoch ?? 0, leaseOwner: "x" } })).toBe(
        undefined,
      );
      expect(await store.claimRun(request)).toBeUndefined();
      const taken = await store.claimRun({ ...request, takeover: { epoch: first?.epoch ?? 0, leaseOwner: lost } });
      expect(taken).toMatchObject({ leaseOwner: "w2", epoch: (first?.epoch ?? 0) + 1 });
    });

    it("resume takes up a PENDING run whose worker is gone, and refuses one a live worker is starting", async () => {
      const store = under.backend();
      const client = under.runtimes.make({ agents: [echo()], backend: store, worker: false });
      const live = await client.run("echo", "shout", { s: "live" });
      await store.claimRun({ workerId: "otherhost:1:live01", now: Date.now(), leaseMs: LONG_LEASE, runId: live.id });
      await expect(client.resume(live.id)).rejects.toThrow(RunNotResumableError);
      await expect(client.resume(live.id)).rejects.toThrow(/PENDING and claimed by worker otherhost:1:live01/);

      const run = await client.run("echo", "shout", { s: "hi" });
      await store.claimRun({ workerId: goneWorkerId(), now: Date.now(), leaseMs: LONG_LEASE, runId: run.id });
      // A worker with a slow poll whose sweep does not look for dead local owners: the resume
      // itself takes the claim over (otherwise the sweep at start may take it first).
      const worker = under.runtimes.make({
        agents: [echo()],
        backend: store,
        worker: { pollIntervalMs: 60_000, detectDeadLocalOwners: false },
      });
      await worker.start();
      await worker.resume(run.id);
      expect((await client.waitFor(run.id, { timeoutMs: 20_000 })).state).toBe("COMPLETED");
    });
  });
});

describe("cairn resume of a PENDING run whose worker died after claiming it", () => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-lost-claim-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("runs it to the end instead of answering that the run is PENDING", async () => {
    const db = join(dir, "cairn.db");
    const started = await cairn([
      "run",
      "examples/report-builder.ts",
      "report_builder",
      "build",
      "--input",
      '{"quarter":"2026-Q3"}',
      "--detach",
      "--db",
      db,
    ]);
    expect(started.code, started.stderr).toBe(0);
    const runId = /run_[0-9a-z]+/.exec(started.stdout)?.[0] as string;
    const backend = new SqliteBackend({ path: db });
    await backend.init();
    await backend.claimRun({ workerId: goneWorkerId(), now: Date.now(), leaseMs: LONG_LEASE, runId });
    await backend.close();

    const resumed = await cairn(["resume", runId, "--module", "examples/report-builder.ts", "--db", db]);
    expect(resumed.stderr).not.toMatch(/is PENDING/);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(/COMPLETED/);
  });
});
