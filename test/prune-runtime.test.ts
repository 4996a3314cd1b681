import { afterEach, describe, expect, it } from "vitest";
import { defineAgent } from "../src/agent/define.ts";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { InvalidInputError } from "../src/core/errors.ts";
import { parseDuration } from "../src/core/retention.ts";
import { Runtimes, until, untilState } from "./helpers/runtime-helpers.ts";

/** `runtime.prune` and the `retention` option (DESIGN §7, "Retention"), on the in-memory backend. */
const agent = defineAgent({
  name: "keeper",
  tools: {},
  workflows: {
    async quick(_ctx, { n }: { n: number }) {
      return n;
    },
    async fail() {
      throw new Error("no");
    },
    async hold(ctx) {
      return ctx.waitForSignal("go");
    },
  },
});

const runtimes = new Runtimes();
afterEach(() => runtimes.closeAll());

describe("runtime.prune", () => {
  it("deletes ended runs older than the duration in batches, dry run first; open runs stay", async () => {
    const runtime = runtimes.make({ agents: [agent] });
    const done = await Promise.all([1, 2, 3, 4, 5].map(async (n) => (await runtime.run(agent, "quick", { n })).id));
    const failed = (await runtime.run(agent, "fail", {})).id;
    const held = (await runtime.run(agent, "hold", {})).id;
    for (const id of [...done, failed]) await runtime.waitFor(id);
    await untilState(runtime.backend, held, "PAUSED");
    expect((await runtime.prune({ olderThan: "1h" })).pruned).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 5));

    const dry = await runtime.prune({ olderThan: 1, states: ["COMPLETED"], batchSize: 2, dryRun: true });
    expect(dry).toMatchObject({ pruned: 5, batches: 3, dryRun: true });
    expect(dry.runIds).toStrictEqual([...done].sort());
    expect(await runtime.listRuns({})).toHaveLength(7);
    const result = await runtime.prune({ olderThan: 1, batchSize: 2 });
    expect(result.pruned).toBe(6);
    expect(result.batches).toBe(4);
    expect((await runtime.listRuns({})).map((r) => r.id)).toStrictEqual([held]);
  });

  it("refuses a duration that does not parse, an open state and a bad batch size", async () => {
    const runtime = runtimes.make({ agents: [agent] });
    for (const options of [
      { olderThan: "30 days" },
      { olderThan: 0 },
      { olderThan: "1d", states: ["PAUSED" as const] },
      { olderThan: "1d", batchSize: 0 },
    ]) {
      await expect(runtime.prune(options)).rejects.toBeInstanceOf(InvalidInputError);
    }
    expect(parseDuration("30d", "x")).toBe(30 * 86_400_000);
    expect(parseDuration("90m", "x")).toBe(90 * 60_000);
  });
});

describe("the retention option", () => {
  it("makes the worker prune ended runs in the background, says so in the contract, and stops on shutdown", async () => {
    const backend = new InMemoryBackend();
    const retention = { olderThan: 1, every: 20, states: ["COMPLETED" as const] };
    const runtime = runtimes.make({ agents: [agent], backend, retention });
    const held = (await runtime.run(agent, "hold", {})).id;
    await untilState(backend, held, "PAUSED");
    const contract = await runtime.exportRun(held);
    expect(contract.checkpoint.retentionAndDeletion).toContain(
      "the runtime's retention deletes runs 1 after they ended COMPLETED",
    );
    expect(contract.checkpoint.retentionAndDeletion).toContain("kept while open");
    const failed = (await runtime.run(agent, "fail", {})).id;
    await runtime.waitFor(failed);
    expect((await runtime.exportRun(failed)).checkpoint.retentionAndDeletion).toContain("not a run that ended FAILED");
    const done = (await runtime.run(agent, "quick", { n: 1 })).id;
    await runtime.waitFor(done);
    await until(async () => (await backend.getRun(done)) === undefined, { what: "the background prune" });
    expect((await backend.getRun(held))?.state).toBe("PAUSED");
    expect((await backend.getRun(failed))?.state).toBe("FAILED");

    await runtime.shutdown({ graceMs: 0 });
    const plain = runtimes.make({ agents: [agent], backend: new InMemoryBackend() });
    const other = (await plain.run(agent, "quick", { n: 2 })).id;
    await plain.waitFor(other);
    expect((await plain.exportRun(other)).checkpoint.retentionAndDeletion).toContain(
      "this runtime prunes nothing by itself",
    );
  });
});
