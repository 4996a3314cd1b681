import { describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import type { ClaimManyRequest, TransitionRequest } from "../src/backend/backend.ts";
import { forEachBackend, intercept } from "./helpers/backends.ts";
import { deferred, forever, until, untilState } from "./helpers/runtime-helpers.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

forEachBackend((under) => {
  const { runtimes } = under;
  describe("review: shutdown grace and leases", () => {
    it("keeps renewing its leases during the grace period, so no other worker runs the run meanwhile", async () => {
      const backend = under.backend();
      const entered = deferred();
      let calls = 0;
      let running = 0;
      let overlap = 0;
      const agent = defineAgent({
        name: "graceful",
        tools: {
          slow: defineTool({
            run: async () => {
              calls++;
              running++;
              if (running > 1) overlap++;
              entered.resolve();
              await sleep(600);
              running--;
              return "done";
            },
          }),
        },
        workflows: {
          async go(ctx) {
            return ctx.tool("slow", {});
          },
        },
      });
      const a = runtimes.make({ agents: [agent], backend, worker: { leaseMs: 150, pollIntervalMs: 10 } });
      const handle = await a.run(agent, "go", {});
      await entered.promise;
      // A second worker on the same store, as another process would be.
      const b = runtimes.make({ agents: [agent], backend, worker: { leaseMs: 150, pollIntervalMs: 10 } });
      await b.start();
      // The tool ends well within the grace: the run should simply complete under worker A. Before the
      // fix A stopped renewing as soon as shutdown began, its 150 ms lease lapsed, and B took the run
      // over and ran the tool a second time while A's call was still running.
      await a.shutdown({ graceMs: 2000 });
      const done = await untilState(backend, handle.id, "COMPLETED");
      expect(done.output).toBe("done");
      expect(overlap).toBe(0);
      expect(calls).toBe(1);
      const transitions = (await backend.listTransitions(handle.id)).map((t) => t.to);
      expect(transitions).toEqual(["PENDING", "RUNNING", "COMPLETED"]);
    });

    it("does not start a run whose RUNNING commit the worker hears of after the shutdown began (slow backend)", async () => {
      // The worker hears of its RUNNING transition's commit only after the shutdown began, as across
      // a slow network: the transition's own, or the claim's that recorded it (claimRuns with start,
      // PostgreSQL). The shutdown begins inside the slowed call, once the commit is made.
      const inner = under.backend();
      const claimRuns = inner.claimRuns?.bind(inner);
      let shutdown: Promise<string> | undefined;
      const shutDownNow = async () => {
        shutdown = rt.shutdown({ graceMs: 0 }).then(() => "shut down");
        await sleep(50);
      };
      const backend = intercept(inner, {
        async transition(request: TransitionRequest) {
          const done = await inner.transition(request);
          if (request.to === "RUNNING") await shutDownNow();
          return done;
        },
        ...(claimRuns && {
          async claimRuns(request: ClaimManyRequest) {
            const claimed = await claimRuns(request);
            if (claimed.some((c) => c.started)) await shutDownNow();
            return claimed;
          },
        }),
      });
      let entered = false;
      const agent = defineAgent({
        name: "late_envelope",
        tools: {
          hang: defineTool({
            run: () => {
              entered = true;
              return forever;
            },
          }),
        },
        workflows: {
          async go(ctx) {
            return ctx.tool("hang", {});
          },
        },
      });
      const rt = runtimes.make({ agents: [agent], backend });
      const handle = await rt.run(agent, "go", {});
      await until(() => shutdown !== undefined);
      // Before the first fix shutdown stopped no envelope (there was none yet), then awaited the run,
      // whose envelope was built next and ran the tool for ever: shutdown never returned. Until the
      // second, the tool could start in the grace period, whether it did depending on timing.
      const outcome = await Promise.race([shutdown, sleep(2000).then(() => "still waiting")]);
      expect(outcome).toBe("shut down");
      expect(entered).toBe(false);
      const run = await backend.getRun(handle.id);
      expect([run?.state, run?.leaseOwner, run?.recoveries]).toEqual(["INTERRUPTED", null, 0]);
      const [last] = (await backend.listTransitions(handle.id)).slice(-1);
      expect(last?.reason).toMatch(/began shutting down before the run started; handed back$/);
    });
  });

  describe("review: a claim that fails", () => {
    it("claims again at once when a poke it took while waiting for its turn went unanswered", async () => {
      // Two runs started in one turn poke the worker twice: the first poke's claim waits a turn and
      // takes the second. When that claim fails (a dropped connection), the second poke must not be
      // lost with it: nothing else would wake the worker before its poll, a minute away here.
      const inner = under.backend();
      let failNext = false;
      const failOnce = () => {
        if (!failNext) return;
        failNext = false;
        throw new Error("connection terminated unexpectedly");
      };
      const claimRuns = inner.claimRuns?.bind(inner);
      const backend = intercept(inner, {
        async claimRun(request) {
          failOnce();
          return inner.claimRun(request);
        },
        ...(claimRuns && {
          async claimRuns(request: ClaimManyRequest) {
            failOnce();
            return claimRuns(request);
          },
        }),
      });
      const agent = defineAgent({
        name: "twice_poked",
        tools: { echo: defineTool({ run: (_ctx, { n }: { n: number }) => n }) },
        workflows: {
          async go(ctx, { n }: { n: number }) {
            return ctx.tool("echo", { n });
          },
        },
      });
      const rt = runtimes.make({ agents: [agent], backend, worker: { pollIntervalMs: 60_000 } });
      await rt.start();
      await sleep(50); // the claim of the start is done
      failNext = true;
      const handles = await Promise.all([rt.run(agent, "go", { n: 1 }), rt.run(agent, "go", { n: 2 })]);
      for (const handle of handles) {
        const run = await until(
          async () => {
            const r = await backend.getRun(handle.id);
            return r?.state === "COMPLETED" ? r : undefined;
          },
          { timeoutMs: 3000, what: `run ${handle.id} COMPLETED` },
        );
        expect(run.output).toBe(handles.indexOf(handle) + 1);
      }
      expect(failNext).toBe(false); // the failure happened
    });
  });

  describe("review: explicit resume racing a recovery sweep", () => {
    it("returns a handle when another worker took over and resumed the run first", async () => {
      /** On the user's takeover, another process's sweep gets there first (INTERRUPTED, RESUMING). */
      const inner = under.backend();
      let raced = false;
      const backend = intercept(inner, {
        async transition(request: TransitionRequest) {
          if (!raced && "takeover" in request.fence) {
            raced = true;
            const sweep = { kind: "system", id: "other-worker" } as const;
            await inner.transition({ ...request, actor: sweep });
            await inner.transition({
              ...request,
              from: "INTERRUPTED",
              to: "RESUMING",
              actor: sweep,
              reason: "automatic recovery 1 of 3",
              at: Date.now(),
              fence: { unowned: true, now: Date.now() },
              patch: { countRecovery: true },
            });
          }
          return inner.transition(request);
        },
      });
      await backend.init();
      const versions = { workflow: "unknown", policy: null, runtime: "test" };
      const { run } = await backend.createRun({
        id: "run_raced",
        agent: "somebody",
        workflow: "go",
        key: null,
        input: null,
        versions,
        meta: {},
        actor: { kind: "user", id: "t" },
        reason: "started",
        at: Date.now(),
      });
      const claimed = await backend.claimRun({ workerId: "gone-host:1:abc", now: Date.now() - 1000, leaseMs: 10 });
      expect(claimed?.id).toBe(run.id);
      await backend.transition({
        runId: run.id,
        from: "PENDING",
        to: "RUNNING",
        actor: { kind: "worker", id: "gone-host:1:abc" },
        reason: "claimed",
        versions,
        at: Date.now(),
        fence: { epoch: claimed?.epoch ?? 0 },
      });
      const agent = defineAgent({ name: "somebody", tools: {}, workflows: { go: async () => 1 } });
      const client = runtimes.make({ agents: [agent], backend, worker: false });
      // Before the fix: LeaseLostError "takeover refused", though the run is being resumed.
      const handle = await client.resume(run.id);
      expect(handle.id).toBe(run.id);
      expect((await backend.getRun(run.id))?.state).toBe("RESUMING");
    });
  });
});
