import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import type { RuntimeBackend, TransitionRequest } from "../src/backend/backend.ts";
import {
  LeaseLostError,
  RunEndedError,
  RunNotFoundError,
  UnknownNameError,
  WaitTimeoutError,
} from "../src/core/errors.ts";
import type { RunRecord, StepRecord, Versions } from "../src/core/records.ts";
import { RUNTIME_VERSION } from "../src/runtime/version.ts";
import { forEachBackend, intercept } from "./helpers/backends.ts";
import { deferred, forever, until, untilState } from "./helpers/runtime-helpers.ts";

function echoAgent(name = "echo", version = "1") {
  return defineAgent({
    name,
    version,
    tools: { upper: defineTool({ run: (_ctx, { s }: { s: string }) => s.toUpperCase() }) },
    workflows: {
      async shout(ctx, { s }: { s: string }) {
        return ctx.tool("upper", { s });
      },
      async whisper(_ctx, { s }: { s: string }) {
        return s.toLowerCase();
      },
    },
  });
}

/** An agent whose only tool blocks until the run is stopped; `entered` resolves when it starts. */
function blockingAgent(name = "blocker") {
  const entered = deferred();
  let release: (() => void) | undefined;
  const released = new Promise<void>((r) => {
    release = r;
  });
  let block = true;
  const agent = defineAgent({
    name,
    tools: {
      hold: defineTool({
        run: async () => {
          if (block) {
            entered.resolve();
            await Promise.race([released, forever]);
          }
          return "released";
        },
      }),
    },
    workflows: {
      async go(ctx) {
        return ctx.tool("hold", {});
      },
    },
  });
  return {
    agent,
    entered: entered.promise,
    unblock: () => {
      block = false;
      release?.();
    },
  };
}

forEachBackend((under) => {
  const { runtimes } = under;
  describe("starting runs", () => {
    it("is idempotent per key: the same run comes back, not created again", async () => {
      const agent = echoAgent();
      const rt = runtimes.make({ agents: [agent] });
      const first = await rt.run(agent, "shout", { s: "hi" }, { key: "k-1" });
      const again = await rt.run(agent, "shout", { s: "something else" }, { key: "k-1" });
      expect(first.created).toBe(true);
      expect(again.created).toBe(false);
      expect(again.id).toBe(first.id);
      expect(await again.result()).toBe("HI");
      expect(await rt.listRuns({ agent: "echo" })).toHaveLength(1);
      const run = await rt.getRun(first.id);
      expect(run.key).toBe("k-1");
      expect(run.input).toEqual({ s: "hi" });
    });

    it("keys are per (agent, workflow): another workflow with the same key is another run", async () => {
      const agent = echoAgent();
      const other = echoAgent("other_echo");
      const rt = runtimes.make({ agents: [agent, other] });
      const a = await rt.run(agent, "shout", { s: "x" }, { key: "shared" });
      const b = await rt.run(agent, "whisper", { s: "X" }, { key: "shared" });
      const c = await rt.run(other, "shout", { s: "x" }, { key: "shared" });
      expect(new Set([a.id, b.id, c.id]).size).toBe(3);
      expect([a.created, b.created, c.created]).toEqual([true, true, true]);
      expect(await b.result()).toBe("x");
    });

    it("runs without a key are always new", async () => {
      const agent = echoAgent();
      const rt = runtimes.make({ agents: [agent] });
      const a = await rt.run(agent, "whisper", { s: "A" });
      const b = await rt.run(agent, "whisper", { s: "A" });
      expect(a.id).not.toBe(b.id);
      expect(b.created).toBe(true);
    });

    it("accepts the agent by name", async () => {
      const agent = echoAgent();
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run("echo", "shout", { s: "by name" });
      expect(await handle.result()).toBe("BY NAME");
    });

    it("names the registered agents for an unknown agent", async () => {
      const rt = runtimes.make({ agents: [echoAgent(), echoAgent("second")] });
      const error = await rt.run("ehco", "shout", {}).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnknownNameError);
      expect((error as UnknownNameError).code).toBe("UNKNOWN_AGENT");
      expect((error as Error).message).toContain('"ehco"');
      expect((error as Error).message).toContain("echo, second");
    });

    it("names the known workflows for an unknown workflow", async () => {
      const agent = echoAgent();
      const rt = runtimes.make({ agents: [agent] });
      const error = await rt.run("echo", "yell", {}).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnknownNameError);
      expect((error as UnknownNameError).code).toBe("UNKNOWN_WORKFLOW");
      expect((error as Error).message).toContain('"yell"');
      expect((error as Error).message).toContain("shout, whisper");
      expect(await rt.listRuns()).toEqual([]);
    });

    it("refuses input that is not JSON before storing anything", async () => {
      const agent = echoAgent();
      const rt = runtimes.make({ agents: [agent] });
      const error = await rt.run("echo", "shout", { s: 1n }).catch((e: unknown) => e);
      expect((error as { code?: string }).code).toBe("NOT_SERIALIZABLE");
      expect(await rt.listRuns()).toEqual([]);
    });

    it("throws RunNotFoundError for an unknown run id", async () => {
      const rt = runtimes.make({ agents: [echoAgent()] });
      const error = await rt.getRun("run_nope").catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RunNotFoundError);
      expect((error as RunNotFoundError).code).toBe("RUN_NOT_FOUND");
    });
  });

  describe("waiting for runs", () => {
    it("waitFor returns a COMPLETED run with its output", async () => {
      const agent = echoAgent();
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "shout", { s: "done" });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("COMPLETED");
      expect(run.output).toBe("DONE");
      expect(run.leaseOwner).toBeNull();
    });

    it("waitFor returns a FAILED run; result() throws RunEndedError RUN_FAILED with the run's error", async () => {
      const agent = defineAgent({
        name: "thrower",
        tools: {},
        workflows: {
          async go() {
            throw new TypeError("bad thing");
          },
        },
      });
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("FAILED");
      expect(run.error).toMatchObject({ name: "TypeError", message: "bad thing" });
      const error = await handle.result().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RunEndedError);
      expect(error).toMatchObject({ code: "RUN_FAILED", runId: handle.id, state: "FAILED" });
      expect((error as RunEndedError).error?.message).toBe("bad thing");
      expect((error as Error).message).toContain("bad thing");
    });

    it("waitFor and result() return when the run is INTERRUPTED by this runtime's shutdown", async () => {
      const { agent, entered } = blockingAgent();
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      await entered;
      const waited = rt.waitFor(handle.id);
      const result = handle.result().catch((e: unknown) => e);
      await rt.shutdown({ graceMs: 0 });
      expect((await waited).state).toBe("INTERRUPTED");
      const error = await result;
      expect(error).toBeInstanceOf(RunEndedError);
      expect((error as RunEndedError).code).toBe("RUN_INTERRUPTED");
    });

    it("a client's waitFor and result() wait through a deploy: the run INTERRUPTED by one worker's shutdown ends COMPLETED under the next", async () => {
      const backend = under.backend();
      const { agent, entered, unblock } = blockingAgent();
      const first = runtimes.make({ agents: [agent], backend });
      const client = runtimes.make({ agents: [agent], backend, worker: false });
      const handle = await first.run(agent, "go", {});
      await entered;
      let settled: RunRecord | undefined;
      const waited = client.waitFor(handle.id, { pollIntervalMs: 10, timeoutMs: 20_000 }).then((run) => {
        settled = run;
        return run;
      });
      const result = client.handle(handle.id).result({ timeoutMs: 20_000 });
      await first.shutdown({ graceMs: 0 });
      expect((await client.getRun(handle.id)).state).toBe("INTERRUPTED");
      // Many polls later the client still waits: the interruption is not the run's outcome.
      await new Promise((r) => setTimeout(r, 150));
      expect(settled).toBeUndefined();
      unblock();
      const next = runtimes.make({ agents: [agent], backend, worker: { pollIntervalMs: 20 } });
      await next.start();
      expect(await result).toBe("released");
      expect((await waited).state).toBe("COMPLETED");
      const path = (await client.history(handle.id)).transitions.map((t) => t.to);
      expect(path).toEqual(["PENDING", "RUNNING", "INTERRUPTED", "RESUMING", "RUNNING", "COMPLETED"]);
    });

    it("waitFor returns an INTERRUPTED run once automatic recovery's bound is used up (maxAutoRecoveries)", async () => {
      const backend = under.backend();
      const { agent, entered } = blockingAgent();
      const worker = runtimes.make({ agents: [agent], backend });
      const client = runtimes.make({ agents: [agent], backend, worker: false });
      const handle = await worker.run(agent, "go", {});
      await entered;
      const waited = client.waitFor(handle.id, { pollIntervalMs: 10, timeoutMs: 5000, maxAutoRecoveries: 0 });
      await worker.shutdown({ graceMs: 0 });
      expect((await waited).state).toBe("INTERRUPTED");
      const error = await client
        .handle(handle.id)
        .result({ timeoutMs: 200 })
        .catch((e: unknown) => e);
      // The client runtime's bound is the default (3): it would wait, and times out instead.
      expect(error).toBeInstanceOf(WaitTimeoutError);
      expect((error as Error).message).toContain("INTERRUPTED");
      const bounded = runtimes.make({ agents: [agent], backend, worker: { maxAutoRecoveries: 0 } });
      const ended = await bounded
        .handle(handle.id)
        .result({ timeoutMs: 5000 })
        .catch((e: unknown) => e);
      expect((ended as RunEndedError).code).toBe("RUN_INTERRUPTED");
    });

    it("waitFor gives up with WaitTimeoutError naming the state", async () => {
      const { agent, entered } = blockingAgent();
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      await entered;
      const error = await rt.waitFor(handle.id, { timeoutMs: 30, pollIntervalMs: 5 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(WaitTimeoutError);
      expect((error as Error).message).toContain("RUNNING");
    });

    it("a client-only runtime never executes runs", async () => {
      const agent = echoAgent();
      const client = runtimes.make({ agents: [agent], worker: false });
      const handle = await client.run(agent, "whisper", { s: "Q" });
      await new Promise((r) => setTimeout(r, 30));
      expect((await client.getRun(handle.id)).state).toBe("PENDING");
      expect(client.workerId).toBeUndefined();
    });
  });

  describe("transitions", () => {
    it("a normal run is PENDING -> RUNNING -> COMPLETED with ids 1, 2, 3, actors and versions", async () => {
      const agent = echoAgent("versioned", "7");
      const rt = runtimes.make({ agents: [agent] });
      const seen: string[] = [];
      rt.onTransition((t) => seen.push(`${t.id}:${t.to}`));
      const handle = await rt.run(agent, "shout", { s: "a" }, { key: "v7" });
      await handle.result();
      const { transitions, run } = await rt.history(handle.id);
      expect(transitions.map((t) => [t.id, t.from, t.to])).toEqual([
        [1, null, "PENDING"],
        [2, "PENDING", "RUNNING"],
        [3, "RUNNING", "COMPLETED"],
      ]);
      expect(transitions[0]?.actor).toEqual({ kind: "user", id: "local" });
      expect(transitions[0]?.reason).toContain('"v7"');
      for (const t of transitions.slice(1)) {
        expect(t.actor).toEqual({ kind: "worker", id: rt.workerId });
      }
      expect(transitions[1]?.reason).toContain(rt.workerId as string);
      const versions: Versions = {
        workflow: "7",
        policy: null,
        runtime: RUNTIME_VERSION,
        authority: null,
        sandbox: null,
        context: null,
      };
      for (const t of transitions) {
        expect(t.versions).toEqual(versions);
        expect(t.runId).toBe(handle.id);
        expect(t.pausedReason).toBeNull();
      }
      expect(run.versions).toEqual(versions);
      expect(run.lastTransitionId).toBe(3);
      expect(seen).toEqual(["1:PENDING", "2:RUNNING", "3:COMPLETED"]);
      const times = transitions.map((t) => t.at);
      expect([...times].sort((a, b) => a - b)).toEqual(times);
    });

    it("records the starter given in `by`", async () => {
      const agent = echoAgent();
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "whisper", { s: "A" }, { by: { kind: "system", id: "cron" } });
      await handle.result();
      expect((await rt.history(handle.id)).transitions[0]?.actor).toEqual({ kind: "system", id: "cron" });
    });

    it("shutdown with a run in flight records RUNNING -> INTERRUPTED naming the worker, and releases the lease", async () => {
      const { agent, entered } = blockingAgent();
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      await entered;
      const workerId = rt.workerId as string;
      await rt.shutdown({ graceMs: 0, reason: "deploy" });
      const transitions = await rt.backend.listTransitions(handle.id);
      const run = await rt.backend.getRun(handle.id);
      const last = transitions.at(-1);
      expect(last).toMatchObject({ id: 3, from: "RUNNING", to: "INTERRUPTED" });
      expect(last?.actor).toEqual({ kind: "worker", id: workerId });
      expect(last?.reason).toContain(workerId);
      expect(last?.reason).toContain("deploy");
      expect(run?.state).toBe("INTERRUPTED");
      expect(run?.leaseOwner).toBeNull();
      expect(run?.leaseExpiresAt).toBeNull();
    });

    it("shutdown lets a run finish within the grace period", async () => {
      const { agent, entered, unblock } = blockingAgent();
      const rt = runtimes.make({ agents: [agent] });
      const handle = await rt.run(agent, "go", {});
      await entered;
      setTimeout(unblock, 10);
      await rt.shutdown({ graceMs: 5000 });
      const run = await rt.backend.getRun(handle.id);
      expect(run?.state).toBe("COMPLETED");
      expect(run?.output).toBe("released");
    });

    it("refuses to start runs after shutdown", async () => {
      const agent = echoAgent();
      const rt = runtimes.make({ agents: [agent] });
      await rt.start();
      await rt.shutdown();
      await expect(rt.run(agent, "shout", { s: "late" })).rejects.toMatchObject({ code: "RUNTIME_CLOSED" });
    });
  });

  describe("recovery", () => {
    const ghost = "ghost-host:424242:0badc0";
    const versions: Versions = { workflow: "1", policy: null, runtime: RUNTIME_VERSION };

    /** A run held by a worker that is gone: created, claimed with a short lease, RUNNING, step 1 done. */
    async function orphanedRun(backend: RuntimeBackend, runId: string, leaseMs: number) {
      await backend.init();
      const now = Date.now();
      await backend.createRun({
        id: runId,
        agent: "recoverable",
        workflow: "go",
        key: null,
        input: { n: 2 },
        versions,
        meta: {},
        actor: { kind: "user", id: "test" },
        reason: "started",
        at: now,
      });
      const claimed = await backend.claimRun({ workerId: ghost, now, leaseMs, runId });
      if (!claimed) throw new Error("claim failed");
      await backend.transition({
        runId,
        from: "PENDING",
        to: "RUNNING",
        actor: { kind: "worker", id: ghost },
        reason: `claimed by worker ${ghost}`,
        versions,
        at: now,
        fence: { epoch: claimed.epoch },
      });
      const step: StepRecord = {
        runId,
        seq: 1,
        kind: "tool",
        name: "double",
        status: "completed",
        // Not the envelope's digest: a differing digest only logs a warning on replay, never fails.
        argsDigest: "",
        args: { n: 2 },
        result: 4,
        error: undefined,
        attempts: [{ attempt: 1, startedAt: now, endedAt: now }],
        heartbeat: undefined,
        usage: undefined,
        startedAt: now,
        endedAt: now,
        epoch: claimed.epoch,
      };
      await backend.saveSteps([step], { epoch: claimed.epoch, sync: true });
    }

    function recoverable(calls: string[], hold?: Promise<void>, entered?: () => void) {
      return defineAgent({
        name: "recoverable",
        tools: {
          double: defineTool({
            run: (_ctx, { n }: { n: number }) => {
              calls.push("double");
              return n * 2;
            },
          }),
          add_one: defineTool({
            run: async (_ctx, { n }: { n: number }) => {
              calls.push("add_one");
              entered?.();
              if (hold) await hold;
              return n + 1;
            },
          }),
        },
        workflows: {
          async go(ctx, { n }: { n: number }) {
            const doubled = await ctx.tool("double", { n });
            return ctx.tool("add_one", { n: doubled });
          },
        },
      });
    }

    it("recovers a run whose lease lapsed: INTERRUPTED naming the lost worker, RESUMING, RUNNING, COMPLETED", async () => {
      const backend = under.backend();
      await orphanedRun(backend, "run_orphan", 100);
      const calls: string[] = [];
      const rt = runtimes.make({
        agents: [recoverable(calls)],
        backend,
        worker: { leaseMs: 200, pollIntervalMs: 50, detectDeadLocalOwners: false },
      });
      await rt.start();
      const run = await until(
        async () => {
          const r = await rt.getRun("run_orphan");
          return r.state === "COMPLETED" ? r : undefined;
        },
        { what: "the orphaned run to complete" },
      );
      expect(run.output).toBe(5);
      expect(calls).toEqual(["add_one"]); // step 1 was the lost worker's and is not run again
      expect(run.recoveries).toBe(1);
      const { transitions } = await rt.history("run_orphan");
      expect(transitions.map((t) => `${t.from}->${t.to}`)).toEqual([
        "null->PENDING",
        "PENDING->RUNNING",
        "RUNNING->INTERRUPTED",
        "INTERRUPTED->RESUMING",
        "RESUMING->RUNNING",
        "RUNNING->COMPLETED",
      ]);
      expect(transitions.map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6]);
      const interrupted = transitions[2];
      expect(interrupted?.reason).toContain(ghost);
      expect(interrupted?.reason).toContain("lease lapsed");
      expect(interrupted?.actor).toEqual({ kind: "system", id: rt.workerId });
      expect(transitions[3]?.actor).toEqual({ kind: "system", id: rt.workerId });
      expect(transitions[4]?.actor).toEqual({ kind: "worker", id: rt.workerId });
      expect(transitions[5]?.actor).toEqual({ kind: "worker", id: rt.workerId });
    });

    it("an explicit resume of a run whose lease lapsed records INTERRUPTED first", async () => {
      const backend = under.backend();
      await orphanedRun(backend, "run_orphan2", 100);
      await new Promise((r) => setTimeout(r, 120));
      // A client runtime (no worker, so no recovery sweep) makes the resume; another one runs it.
      const client = runtimes.make({ agents: [recoverable([])], backend, worker: false });
      await client.resume("run_orphan2", { by: { kind: "user", id: "ops" } });
      expect((await client.getRun("run_orphan2")).state).toBe("RESUMING");
      const calls: string[] = [];
      const rt = runtimes.make({ agents: [recoverable(calls)], backend, worker: { detectDeadLocalOwners: false } });
      expect(await rt.handle("run_orphan2").result()).toBe(5);
      expect(calls).toEqual(["add_one"]);
      const { transitions } = await rt.history("run_orphan2");
      expect(transitions.slice(2, 4).map((t) => [t.to, t.actor.id])).toEqual([
        ["INTERRUPTED", "ops"],
        ["RESUMING", "ops"],
      ]);
      expect(transitions[2]?.reason).toContain(ghost);
    });

    it("an explicit resume of a lapsed run is not refused when a recovery sweep records the loss first", async () => {
      const backend = under.backend();
      await orphanedRun(backend, "run_swept", 50);
      await new Promise((r) => setTimeout(r, 70));
      // The run waits in its last tool until the resume has returned: otherwise the runtime's own
      // sweep can finish it before the resume reads it (it then refuses a COMPLETED run), which a
      // backend whose first query in a runtime opens a connection lets happen.
      const release = deferred();
      const rt = runtimes.make({
        agents: [recoverable([], release.promise)],
        backend,
        worker: { pollIntervalMs: 20, detectDeadLocalOwners: false },
      });
      const handle = await rt.resume("run_swept");
      release.resolve();
      expect(await handle.result()).toBe(5);
      const path = (await rt.history("run_swept")).transitions.map((t) => t.to);
      expect(path).toEqual(["PENDING", "RUNNING", "INTERRUPTED", "RESUMING", "RUNNING", "COMPLETED"]);
    });

    it("an explicit resume goes on when a sweep takes the run over between its read and its write", async () => {
      /** Lets a "sweeper" record the loss just before the resume's own takeover is written. */
      const inner = under.backend();
      let raced = false;
      const backend = intercept(inner, {
        async transition(request: TransitionRequest) {
          if (!raced && request.to === "INTERRUPTED" && request.actor.kind === "user") {
            raced = true;
            await inner.transition({ ...request, actor: { kind: "system", id: "sweeper" }, reason: "swept" });
          }
          return inner.transition(request);
        },
      });
      await orphanedRun(backend, "run_raced", 50);
      await new Promise((r) => setTimeout(r, 70));
      const client = runtimes.make({ agents: [recoverable([])], backend, worker: false });
      await client.resume("run_raced");
      expect(raced).toBe(true);
      const { transitions } = await client.history("run_raced");
      expect(transitions.map((t) => [t.to, t.actor.id])).toEqual([
        ["PENDING", "test"],
        ["RUNNING", ghost],
        ["INTERRUPTED", "sweeper"],
        ["RESUMING", "local"],
      ]);
    });

    it("an explicit resume goes on when another worker resumed and claimed the run before its write", async () => {
      /** A worker's recovery resumes and claims the INTERRUPTED run just before the explicit resume writes. */
      const inner = under.backend();
      let raced = false;
      const backend = intercept(inner, {
        async transition(request: TransitionRequest) {
          if (!raced && request.to === "RESUMING" && request.actor.kind === "user") {
            raced = true;
            const sweeper = { kind: "system" as const, id: "sweeper" };
            await inner.transition({ ...request, actor: sweeper, fence: { unowned: true, now: Date.now() } });
            const claimed = await inner.claimRun({
              workerId: "other",
              now: Date.now(),
              leaseMs: 60_000,
              runId: request.runId,
            });
            if (!claimed) throw new Error("claim failed");
          }
          return inner.transition(request);
        },
      });
      await orphanedRun(backend, "run_claimed", 50);
      await new Promise((r) => setTimeout(r, 70));
      const client = runtimes.make({ agents: [recoverable([])], backend, worker: false });
      await client.resume("run_claimed");
      expect(raced).toBe(true);
      const run = await client.getRun("run_claimed");
      expect(run.leaseOwner).toBe("other");
      const path = (await client.history("run_claimed")).transitions.map((t) => [t.to, t.actor.id]);
      expect(path).toEqual([
        ["PENDING", "test"],
        ["RUNNING", ghost],
        ["INTERRUPTED", "local"],
        ["RESUMING", "sweeper"],
      ]);
    });

    it("resuming a run that is already RESUMING is a no-op", async () => {
      const backend = under.backend();
      await orphanedRun(backend, "run_again", 50);
      await new Promise((r) => setTimeout(r, 70));
      const client = runtimes.make({ agents: [recoverable([])], backend, worker: false });
      await client.resume("run_again");
      const again = await client.resume("run_again");
      expect(again.id).toBe("run_again");
      const path = (await client.history("run_again")).transitions.map((t) => t.to);
      expect(path).toEqual(["PENDING", "RUNNING", "INTERRUPTED", "RESUMING"]);
    });

    it("refuses an explicit resume while the owner's lease is live", async () => {
      const backend = under.backend();
      await orphanedRun(backend, "run_held", 60_000);
      const rt = runtimes.make({ agents: [recoverable([])], backend, worker: false });
      const error = await rt.resume("run_held").catch((e: unknown) => e);
      expect((error as { code?: string }).code).toBe("RUN_NOT_RESUMABLE");
      expect((error as Error).message).toContain(ghost);
      expect((await rt.getRun("run_held")).state).toBe("RUNNING");
    });

    it("an explicit resume is not refused when automatic recovery resumes the run first", async () => {
      const backend = under.backend();
      const first = blockingAgent("racer");
      const a = runtimes.make({ agents: [first.agent], backend });
      const handle = await a.run(first.agent, "go", {});
      await first.entered;
      await a.shutdown({ graceMs: 0 });
      const second = blockingAgent("racer");
      // Its worker starts with a recovery sweep that races this resume. The tool is held until the
      // resume returns: a sweep that also finished the run first would have it refused as COMPLETED.
      const b = runtimes.make({ agents: [second.agent], backend });
      const resumed = await b.resume(handle.id);
      second.unblock();
      expect(await resumed.result()).toBe("released");
      const path = (await b.history(handle.id)).transitions.map((t) => t.to);
      expect(path).toEqual(["PENDING", "RUNNING", "INTERRUPTED", "RESUMING", "RUNNING", "COMPLETED"]);
    });

    it("bounds automatic recovery: with maxAutoRecoveries 1 a run interrupted twice waits for an explicit resume", async () => {
      const backend = under.backend();
      await orphanedRun(backend, "run_twice", 50);
      const worker = { leaseMs: 200, pollIntervalMs: 20, maxAutoRecoveries: 1, detectDeadLocalOwners: false };

      // First interruption (lapsed lease): recovered automatically, then lost again: another
      // worker's sweep takes the run from r1 the way it does when r1's process has died.
      const entered = deferred();
      const r1 = runtimes.make({ agents: [recoverable([], forever, entered.resolve)], backend, worker });
      await r1.start();
      await entered.promise;
      // r1 renews its 200 ms lease meanwhile; on a backend with a round trip the renewal can land
      // between the read and the takeover, which is then refused: read again, as a sweeper would.
      await until(
        async () => {
          const held = (await backend.getRun("run_twice")) as RunRecord;
          expect(held.leaseOwner).toBe(r1.workerId);
          return backend
            .transition({
              runId: "run_twice",
              from: "RUNNING",
              to: "INTERRUPTED",
              actor: { kind: "system", id: "sweeper" },
              reason: `worker ${r1.workerId} was lost`,
              versions,
              at: Date.now(),
              fence: { takeover: { epoch: held.epoch, leaseExpiresAt: held.leaseExpiresAt } },
            })
            .then(
              () => true,
              (error: unknown) => {
                if (error instanceof LeaseLostError) return false;
                throw error;
              },
            );
        },
        { what: "the sweeper's takeover" },
      );
      // r1 is as good as dead: its process goes away (having lost the run, it records nothing).
      await r1.shutdown({ graceMs: 0 });
      const twice = await backend.getRun("run_twice");
      expect(twice?.state).toBe("INTERRUPTED");
      expect(twice?.recoveries).toBe(1);

      // Second interruption: the bound is used up, so the sweeps leave it alone.
      const calls: string[] = [];
      const r2 = runtimes.make({ agents: [recoverable(calls)], backend, worker });
      await r2.start();
      await new Promise((r) => setTimeout(r, 150)); // several recovery sweeps
      expect((await r2.getRun("run_twice")).state).toBe("INTERRUPTED");
      expect(calls).toEqual([]);

      const handle = await r2.resume("run_twice");
      expect(await handle.result()).toBe(5);
      expect(calls).toEqual(["add_one"]);
      const { transitions } = await r2.history("run_twice");
      expect(transitions.map((t) => t.to)).toEqual([
        "PENDING",
        "RUNNING",
        "INTERRUPTED",
        "RESUMING",
        "RUNNING",
        "INTERRUPTED",
        "RESUMING",
        "RUNNING",
        "COMPLETED",
      ]);
      expect(transitions.map((t) => t.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(transitions[3]?.reason).toContain("automatic recovery 1 of 1");
      expect(transitions[6]?.actor).toEqual({ kind: "user", id: "local" });
    });

    it("does not use up the bound on automatic recoveries: a run shut down after a crash recovery is recovered again", async () => {
      const backend = under.backend();
      await orphanedRun(backend, "run_deployed", 50);
      const worker = { leaseMs: 200, pollIntervalMs: 20, maxAutoRecoveries: 1, detectDeadLocalOwners: false };
      const entered = deferred();
      const r1 = runtimes.make({ agents: [recoverable([], forever, entered.resolve)], backend, worker });
      await r1.start();
      await entered.promise;
      expect((await backend.getRun("run_deployed"))?.recoveries).toBe(1);
      await r1.shutdown({ graceMs: 0 });
      const handedOver = await backend.getRun("run_deployed");
      expect(handedOver).toMatchObject({ state: "INTERRUPTED", recoveries: 0, leaseOwner: null });

      const calls: string[] = [];
      const r2 = runtimes.make({ agents: [recoverable(calls)], backend, worker });
      await r2.start();
      // Not result(): it returns at once if it reads the run before r2's recovery sweep has moved
      // it on (INTERRUPTED is an end state to it), which a backend with a round trip lets happen.
      expect((await untilState(backend, "run_deployed", "COMPLETED")).output).toBe(5);
      expect(calls).toEqual(["add_one"]);
      const { transitions } = await r2.history("run_deployed");
      expect(transitions.at(-3)).toMatchObject({ to: "RESUMING", actor: { kind: "system" } });
      expect(transitions.at(-3)?.reason).toContain("automatic recovery 1 of 1");
    });
  });

  describe("leases", () => {
    it("a worker that lost its lease stores nothing more for the run", async () => {
      const backend = under.backend();
      const { agent, entered, unblock } = blockingAgent("fenced");
      const rt = runtimes.make({ agents: [agent], backend, worker: { leaseMs: 60_000, maxAutoRecoveries: 0 } });
      const handle = await rt.run(agent, "go", {});
      await entered;
      const held = await untilState(backend, handle.id, "RUNNING");
      // Another worker takes the run over (as after a lapse), which moves the epoch on.
      await backend.transition({
        runId: handle.id,
        from: "RUNNING",
        to: "INTERRUPTED",
        actor: { kind: "system", id: "other" },
        reason: "taken over",
        versions: held.versions,
        at: Date.now(),
        fence: { takeover: { epoch: held.epoch, leaseExpiresAt: held.leaseExpiresAt } },
      });
      unblock();
      await new Promise((r) => setTimeout(r, 50));
      const run = await backend.getRun(handle.id);
      expect(run?.state).toBe("INTERRUPTED");
      const [step] = await backend.loadSteps(handle.id);
      expect(step?.status).toBe("started"); // the old owner's result was refused
      expect((await backend.listTransitions(handle.id)).map((t) => t.to)).toEqual([
        "PENDING",
        "RUNNING",
        "INTERRUPTED",
      ]);
    });
  });

  describe("processes hosting different agents on one backend", () => {
    it("each worker claims only runs of its own agents", async () => {
      const backend = under.backend();
      const echo = echoAgent("echo");
      const other = echoAgent("other");
      const onlyOther = runtimes.make({ agents: [other], backend, worker: { pollIntervalMs: 10 } });
      await onlyOther.start();
      // A client-only runtime starts a run of "echo"; the worker that has only "other" must leave it.
      const client = runtimes.make({ agents: [echo, other], backend, worker: false });
      const handle = await client.run(echo, "shout", { s: "hi" });
      await new Promise((r) => setTimeout(r, 100));
      expect((await backend.getRun(handle.id))?.state).toBe("PENDING");
      const withEcho = runtimes.make({ agents: [echo], backend, worker: { pollIntervalMs: 10 } });
      await withEcho.start();
      expect(await handle.result({ timeoutMs: 5000 })).toBe("HI");
      const claimedBy = (await client.history(handle.id)).transitions[1]?.actor.id;
      expect(claimedBy).toBe(withEcho.workerId);
    });
  });
});
