import { describe, expect, it } from "vitest";
import { defineAgent, InMemoryBackend, Runtime, StorageError, silentLogger } from "../src/index.ts";

describe("waitFor through a storage outage", () => {
  it("waits out StorageError from reads (a database restart) and returns the run once it ended", async () => {
    const agent = defineAgent({
      name: "sleepy",
      tools: {},
      workflows: {
        async nap(ctx, _input: null) {
          await ctx.sleep(150);
          return "rested";
        },
      },
    });
    const backend = new InMemoryBackend();
    let down = false;
    const flaky = new Proxy(backend, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (property === "getRun" && typeof value === "function") {
          return (...args: unknown[]) =>
            down
              ? Promise.reject(new StorageError("the database is restarting"))
              : (value as (...a: unknown[]) => unknown).apply(target, args);
        }
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const rt = new Runtime({ agents: [agent], backend: flaky, logger: silentLogger });
    const run = await rt.run(agent, "nap", null);
    down = true;
    setTimeout(() => {
      down = false;
    }, 400);
    const ended = await rt.waitFor(run.id, { timeoutMs: 5000, pollIntervalMs: 50 });
    expect(ended.state).toBe("COMPLETED");
    expect(ended.output).toBe("rested");
    down = true;
    await expect(rt.waitFor(run.id, { timeoutMs: 0 })).rejects.toBeInstanceOf(StorageError);
    down = false;
    await rt.shutdown();
  });
});
