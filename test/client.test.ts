import { afterEach, describe, expect, it } from "vitest";
import { CairnClient } from "../src/client/cairn-client.ts";
import { CairnHttpError } from "../src/client/http-error.ts";
import { RunEndedError } from "../src/core/errors.ts";
import { silentLogger } from "../src/core/logger.ts";
import type { WaitRecord } from "../src/core/records.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { type ListeningServer, serve } from "../src/server/serve.ts";
import { desk, makeServer, TOKENS } from "./helpers/server-fixtures.ts";

/** CairnClient against a server listening on an ephemeral port (@hono/node-server). */

let listening: ListeningServer | undefined;

afterEach(async () => {
  await listening?.close();
  listening = undefined;
});

async function start(): Promise<{ url: string; s: ReturnType<typeof makeServer> }> {
  const s = makeServer();
  listening = await serve(s.server, { port: 0 });
  return { url: listening.url, s };
}

/** Polls the run's waits until one is open. */
async function openWait(client: CairnClient, runId: string): Promise<WaitRecord> {
  for (;;) {
    const wait = (await client.waits(runId)).find((w) => w.status === "open");
    if (wait) return wait;
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("CairnClient", () => {
  it("drives a run end to end: start, answer, approve, result, with the live events", async () => {
    const { url } = await start();
    const operator = new CairnClient({ baseUrl: url, token: TOKENS.operator });
    const alice = new CairnClient({ baseUrl: `${url}/`, token: TOKENS.alice });
    expect(await operator.me()).toEqual({ subject: "olga", roles: ["operator"], auth: "token" });
    expect((await operator.agents()).map((a) => a.name)).toEqual(["desk"]);

    const run = await operator.run("desk", "full", null, { key: "e2e-1", meta: { case: "e2e" } });
    expect(run.created).toBe(true);
    const events: string[] = [];
    const following = (async () => {
      for await (const event of operator.events(run.id)) {
        events.push(event.type === "transition" ? event.data.to : event.type);
      }
    })();

    const question = await openWait(operator, run.id);
    expect(question).toMatchObject({ kind: "user", details: { question: "how much?" } });
    const answered = await operator.answer(run.id, question.id, { n: 12 });
    expect(answered.resolution).toMatchObject({ outcome: "answered", by: { id: "olga" } });

    const approval = await openWait(alice, run.id);
    expect(approval).toMatchObject({ kind: "approval", details: { payload: { amount: 12 }, approvers: ["alice"] } });
    const digest = (approval.details as { digest: string }).digest;
    const decided = await alice.approve(run.id, approval.id, { digest, note: "fine" });
    expect(decided.resolution).toMatchObject({ outcome: "approved", by: { kind: "user", id: "alice" } });

    expect(await run.result({ timeoutMs: 5000 })).toEqual({ paid: { paid: 12 } });
    await following;
    // The tool's attempt, live from the serving process (the SSE stream passes step.* events on).
    expect(events.indexOf("step.start")).toBeLessThan(events.indexOf("step.end"));
    expect(events.indexOf("step.end")).toBeLessThan(events.indexOf("COMPLETED"));
    expect(events.filter((e) => e !== "step" && !e.startsWith("step."))).toEqual([
      "PENDING",
      "RUNNING",
      "PAUSED",
      "RESUMING",
      "RUNNING",
      "PAUSED",
      "RESUMING",
      "RUNNING",
      "COMPLETED",
      "end",
    ]);
    expect(events).toContain("step");

    const history = await operator.history(run.id);
    expect(history.run.state).toBe("COMPLETED");
    expect(history.transitions.find((t) => t.to === "RESUMING" && t.actor.id === "alice")).toBeDefined();
    expect(history.steps.length).toBeGreaterThanOrEqual(2);
    expect(history.waits).toHaveLength(2);
    const page = await operator.listRuns({ state: ["COMPLETED"], limit: 10 });
    expect(page.runs.map((r) => r.id)).toEqual([run.id]);
    const again = await operator.run("desk", "full", null, { key: "e2e-1" });
    expect(again).toMatchObject({ id: run.id, created: false });
    expect((await operator.accept(run.id, { note: "good" })).acceptance?.decision).toBe("accepted");
    expect((await operator.exportRun(run.id)).contract.version).toBe("cairn.run-contract/1");
  });

  it("calls its fetch as a plain function, as a browser's fetch must be called", async () => {
    const { url } = await start();
    // A browser's fetch throws "Illegal invocation" when called as a method of another object.
    function browserLikeFetch(this: unknown, input: string | URL | Request, init?: RequestInit): Promise<Response> {
      if (this !== undefined && this !== globalThis) throw new TypeError("Illegal invocation");
      return fetch(input, init);
    }
    const viewer = new CairnClient({ baseUrl: url, token: TOKENS.viewer, fetch: browserLikeFetch as typeof fetch });
    expect(await viewer.listRuns()).toMatchObject({ runs: [] });
  });

  it("throws CairnHttpError with the server's code and status", async () => {
    const { url } = await start();
    const viewer = new CairnClient({ baseUrl: url, token: TOKENS.viewer });
    const operator = new CairnClient({ baseUrl: url, token: TOKENS.operator });
    const missing = await viewer.getRun("run_nope").catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(CairnHttpError);
    expect(missing).toMatchObject({ code: "RUN_NOT_FOUND", status: 404 });
    await expect(viewer.run("desk", "quick", 1)).rejects.toMatchObject({ code: "FORBIDDEN", status: 403 });
    await expect(operator.run("nobody", "quick", 1)).rejects.toMatchObject({ code: "UNKNOWN_AGENT", status: 422 });
    const anonymous = new CairnClient({ baseUrl: url });
    await expect(anonymous.listRuns()).rejects.toMatchObject({ code: "UNAUTHENTICATED", status: 401 });
    await expect(anonymous.events("run_nope")[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      code: "UNAUTHENTICATED",
    });
  });

  it("a run that does not complete throws RunEndedError from result()", async () => {
    const { url, s } = await start();
    const operator = new CairnClient({ baseUrl: url, token: TOKENS.operator });
    const run = await operator.run("desk", "ask", null);
    await openWait(operator, run.id);
    const cancelled = await operator.cancel(run.id, { reason: "changed my mind" });
    expect(cancelled.state).toBe("CANCELLING");
    const error = await run.result({ timeoutMs: 5000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RunEndedError);
    expect(error).toMatchObject({ code: "RUN_CANCELLED" });
    expect((await s.runtime.getRun(run.id)).state).toBe("CANCELLED");
  });

  it("result() waits through an interruption that recovery takes up, and returns INTERRUPTED past maxAutoRecoveries", async () => {
    // The server only serves: the run is driven (and lost) by a worker that is not there.
    const s = makeServer({}, { worker: false });
    listening = await serve(s.server, { port: 0 });
    const operator = new CairnClient({ baseUrl: listening.url, token: TOKENS.operator });
    const started = await operator.run("desk", "quick", { n: 7 });
    const backend = s.runtime.backend;
    const lost = "gone-host:1:abc";
    const claimed = await backend.claimRun({ workerId: lost, now: Date.now(), leaseMs: 60_000 });
    expect(claimed?.id).toBe(started.id);
    const move = async (from: "PENDING" | "RUNNING", to: "RUNNING" | "INTERRUPTED") =>
      backend.transition({
        runId: started.id,
        from,
        to,
        actor: { kind: "worker", id: lost },
        reason: to === "RUNNING" ? "claimed" : "the worker was lost",
        versions: started.run.versions,
        at: Date.now(),
        fence: { epoch: claimed?.epoch ?? 0 },
        ...(to === "INTERRUPTED" && { patch: { releaseLease: true } }),
      });
    await move("PENDING", "RUNNING");
    await move("RUNNING", "INTERRUPTED");

    expect((await operator.waitFor(started.id, { maxAutoRecoveries: 0 })).state).toBe("INTERRUPTED");
    let settled = false;
    const result = started.result({ pollIntervalMs: 10, timeoutMs: 20_000 }).finally(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 150));
    expect(settled).toBe(false);
    // A worker comes up (the deploy's next version): its recovery resumes the run.
    const worker = new Runtime({ agents: [desk], backend, logger: silentLogger });
    try {
      await worker.start();
      expect(await result).toEqual({ n: 7 });
    } finally {
      await worker.shutdown();
    }
  });

  it("resumes an event stream from an event id, and follows all runs", async () => {
    const { url } = await start();
    const operator = new CairnClient({ baseUrl: url, token: TOKENS.operator });
    const abort = new AbortController();
    const all: string[] = [];
    const watching = (async () => {
      for await (const event of operator.allEvents({ signal: abort.signal })) {
        all.push(event.type === "transition" ? `${event.data.workflow}:${event.data.to}` : event.type);
        if (all.includes("signal:COMPLETED")) abort.abort();
      }
    })();
    while (all.length === 0) await new Promise((r) => setTimeout(r, 5));

    const run = await operator.run("desk", "signal", null);
    let pausedId = "";
    for await (const event of operator.events(run.id)) {
      if (event.type === "transition" && event.data.to === "PAUSED") {
        pausedId = event.id;
        break;
      }
    }
    expect(await operator.signal(run.id, "go", { x: 9 }, { messageId: "once" })).toMatchObject({ duplicate: false });
    const after: string[] = [];
    for await (const event of operator.events(run.id, { from: pausedId })) {
      if (event.type === "transition") after.push(event.data.to);
    }
    expect(after).toEqual(["RESUMING", "RUNNING", "COMPLETED"]);
    await watching;
    expect(all[0]).toBe("ready");
    expect(all.slice(1)).toEqual([
      "signal:PENDING",
      "signal:RUNNING",
      "signal:PAUSED",
      "signal:RESUMING",
      "signal:RUNNING",
      "signal:COMPLETED",
    ]);
  });

  it("starts with a compensation mode: the agent's for an operator, any for an admin", async () => {
    const { url } = await start();
    const operator = new CairnClient({ baseUrl: url, token: TOKENS.operator });
    const admin = new CairnClient({ baseUrl: url, token: TOKENS.admin });
    expect((await operator.run("desk", "quick", 1, { compensate: "never" })).run.meta.compensate).toBe("never");
    const refused = await operator.run("desk", "quick", 1, { compensate: "on_failure" }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(CairnHttpError);
    expect(refused).toMatchObject({ status: 403, code: "FORBIDDEN" });
    expect((await admin.run("desk", "quick", 1, { compensate: "on_failure" })).run.meta.compensate).toBe("on_failure");
  });
});
