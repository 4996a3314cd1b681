import { afterEach, describe, expect, it } from "vitest";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import { digestContract } from "../src/core/contract-digest.ts";
import { ContractAlteredError, ImportConflictError } from "../src/core/errors.ts";
import type { RunContract } from "../src/core/run-contract.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { InMemoryBackend, Runtimes, until, untilState } from "./helpers/runtime-helpers.ts";
import { makeServer } from "./helpers/server-fixtures.ts";

/**
 * `runtime.importRun` and `runtime.moveRun` (DESIGN §5, "Moving a run") on every backend, and their
 * HTTP routes: a run comes back as it was and continues from there; an altered contract is refused
 * naming the field; a second import is a no-op.
 */
const calls = { fetch: 0, post: 0 };
let blocked = true;

const mover = defineAgent({
  name: "mover",
  tools: {
    fetch: defineTool({
      run: async (_ctx, { n }: { n: number }) => {
        calls.fetch += 1;
        return { n: n * 2 };
      },
    }),
    post: defineTool({
      effect: {},
      run: async (ctx, { n }: { n: number }) => {
        if (blocked)
          await new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
        calls.post += 1;
        return { posted: n };
      },
    }),
  },
  workflows: {
    async go(ctx, { n }: { n: number }) {
      const fetched = await ctx.tool("fetch", { n });
      const note = await ctx.waitForSignal<{ note: string }>("go-on");
      const posted = await ctx.tool("post", { n: fetched.n });
      return { fetched, note, posted };
    },
  },
});

/** A contract's content that must survive a move, without what the store or the import adds. */
function portable(c: RunContract) {
  const { contract: _c, checkpoint, run, journal, ...rest } = c;
  const { imported: _i, ...meta } = run.meta;
  return {
    ...rest,
    run: { ...run, meta },
    checkpoint: { ...checkpoint, store: null },
    journal: journal.steps.map((s) => ({ ...s, epoch: 0 })),
  };
}

forEachBackend((under) => {
  const source = new Runtimes();
  afterEach(() => source.closeAll());

  describe("importRun", () => {
    it("recreates a paused run as it was, and it continues from there", async () => {
      calls.fetch = 0;
      blocked = false;
      const from = source.make({ agents: [mover], backend: new InMemoryBackend() });
      const handle = await from.run("mover", "go", { n: 2 }, { key: "k-1", job: { owner: "ops" } });
      await untilState(from.backend, handle.id, "PAUSED");
      await from.signal(handle.id, "unrelated", { x: 1 }, { messageId: "m-0" });
      const contract = await from.moveRun(handle.id, { to: "elsewhere" });
      expect((await from.getRun(handle.id)).state).toBe("MOVED");

      const to = under.runtimes.make({ agents: [mover] });
      const first = await to.importRun(JSON.parse(JSON.stringify(contract)));
      expect(first.created).toBe(true);
      expect(portable(await to.exportRun(handle.id))).toEqual(portable(contract));
      const second = await to.importRun(contract);
      expect(second).toMatchObject({ created: false, run: { id: handle.id, state: "PAUSED" } });

      await to.signal(handle.id, "go-on", { note: "now" });
      expect(await to.waitFor(handle.id).then((r) => r.output)).toEqual({
        fetched: { n: 4 },
        note: { note: "now" },
        posted: { posted: 4 },
      });
      expect(calls.fetch).toBe(1);
      const ids = (await to.history(handle.id)).transitions.map((t) => t.id);
      expect(ids).toEqual(ids.map((_, i) => i + 1));
    });

    it("imports an INTERRUPTED run that a resume takes up, its cut-off effect not run blind", async () => {
      calls.post = 0;
      blocked = true;
      const store = new InMemoryBackend();
      const from = source.make({ agents: [mover], backend: store });
      const handle = await from.run("mover", "go", { n: 1 });
      await untilState(from.backend, handle.id, "PAUSED");
      await from.signal(handle.id, "go-on", { note: "x" });
      await until(async () => (await store.loadSteps(handle.id)).find((st) => st.name === "post"), {
        what: "the post step to start",
      });
      await from.shutdown({ graceMs: 0 });
      const reader = source.make({ agents: [mover], backend: store, worker: false });
      const contract = await reader.exportRun(handle.id);
      expect(contract.run.state).toBe("INTERRUPTED");

      blocked = false;
      const to = under.runtimes.make({ agents: [mover] });
      await to.importRun(contract);
      await to.resume(handle.id);
      const run = await to.waitFor(handle.id);
      // The post's attempt was cut off with the source's process: without a status query and not
      // declared idempotent, its effect is not run blind on the destination either.
      expect(run.state).toBe("NEEDS_RECONCILIATION");
      expect(run.error?.message).toContain("e3");
      expect(calls.post).toBe(0);
    });

    it("refuses an altered contract naming the field, and another run under the id", async () => {
      const from = source.make({ agents: [mover], backend: new InMemoryBackend() });
      const handle = await from.run("mover", "go", { n: 3 });
      await untilState(from.backend, handle.id, "PAUSED");
      const contract = await from.exportRun(handle.id);
      const to = under.runtimes.make({ agents: [mover] });
      const steps = contract.journal.steps.map((s, i) => (i === 0 ? { ...s, result: { n: 600 } } : s));
      const altered = { ...contract, journal: { steps } };
      const error = await to.importRun(altered).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ContractAlteredError);
      expect((error as ContractAlteredError).field).toBe("journal.steps[0]");
      const { digest: _d, ...bare } = contract.contract;
      await expect(to.importRun({ ...contract, contract: bare })).rejects.toThrow(/no digest/);
      expect(await to.listRuns()).toEqual([]);
      const other = await to.run("mover", "go", { n: 9 });
      const clash = { ...contract, run: { ...contract.run, id: other.id } };
      const redigested = { ...clash, contract: { ...contract.contract, digest: digestContract(clash) } };
      await expect(to.importRun(redigested)).rejects.toBeInstanceOf(ImportConflictError);
    });
  });
});

describe("the import and move routes", () => {
  it("are admin only; a move answers the contract, an import of it creates then finds the run", async () => {
    blocked = false;
    const s = makeServer();
    const from = new Runtimes().make({ agents: [mover], backend: new InMemoryBackend() });
    const handle = await from.run("mover", "go", { n: 5 });
    await untilState(from.backend, handle.id, "PAUSED");
    const contract = await from.exportRun(handle.id);
    const denied = await s.call("POST", "/api/runs/import", { token: "operator", body: contract });
    expect(denied.status).toBe(403);
    const created = await s.call("POST", "/api/runs/import", { token: "admin", body: contract });
    expect(created.status).toBe(201);
    expect(created.body.run).toMatchObject({ id: handle.id, state: "PAUSED" });
    expect((await s.call("POST", "/api/runs/import", { token: "admin", body: contract })).status).toBe(200);
    const moved = await s.call("POST", `/api/runs/${handle.id}/move`, { token: "admin", body: { to: "dc-2" } });
    expect(moved.status).toBe(200);
    expect(moved.body.contract.run.state).toBe("PAUSED");
    expect((await s.runtime.getRun(handle.id)).state).toBe("MOVED");
    await from.shutdown();
  });
});
