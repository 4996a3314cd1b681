import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { CairnClient } from "../src/client/cairn-client.ts";
import type { RemoteRunHandle } from "../src/client/remote-types.ts";
import { silentLogger } from "../src/core/logger.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { createServer } from "../src/server/app.ts";
import { type ListeningServer, serve } from "../src/server/serve.ts";
import type { agents } from "./fixtures/typed-agents.ts";
import * as live from "./fixtures/typed-agents.ts";

/*
 * `CairnClient<typeof agents>` (issue 25, item 5): typed with the agent definitions, given as a
 * type only, `run` checks the agent and workflow names and the input, and `result()` has the
 * workflow's output type, as in-process runs do. `npx tsc -p tsconfig.json --noEmit` fails if a
 * `@ts-expect-error` below stops being needed; the same calls then run against a live server.
 */

let listening: ListeningServer | undefined;
let runtime: Runtime | undefined;

afterEach(async () => {
  await listening?.close();
  await runtime?.shutdown({ graceMs: 0 });
  listening = undefined;
  runtime = undefined;
});

async function serveAgents(): Promise<string> {
  runtime = new Runtime({ agents: live.agents, backend: new InMemoryBackend(), logger: silentLogger });
  await runtime.start();
  listening = await serve(createServer(runtime, { logger: silentLogger }), { port: 0 });
  return listening.url;
}

describe("CairnClient typed with the agents", () => {
  it("types inputs and results by agent and workflow, and runs them on a live server", async () => {
    const client = new CairnClient<typeof agents>({ baseUrl: await serveAgents() });

    const order = await client.run("orders", "total", { items: [{ sku: "tea", qty: 3 }] });
    expectTypeOf(order).toEqualTypeOf<RemoteRunHandle<{ total: number; lines: number }>>();
    const total = await order.result();
    expectTypeOf(total).toEqualTypeOf<{ total: number; lines: number }>();
    expect(total).toEqual({ total: 12, lines: 1 });

    const shout = await client.run("orders", "echo", "quiet");
    expectTypeOf(await shout.result()).toEqualTypeOf<string>();
    expect(await shout.result()).toBe("QUIET");

    const greeting = await client.run("greeter", "hello", { who: "ana" }, { key: "hello-ana" });
    expectTypeOf(await greeting.result()).toEqualTypeOf<string>();
    expect(await greeting.result()).toBe("hello ana");
  });

  it("refuses, at compile time, names and inputs the agents do not have; the server refuses them too", async () => {
    const client = new CairnClient<typeof agents>({ baseUrl: await serveAgents() });
    const refusals = [
      // @ts-expect-error: no agent "billing"
      () => client.run("billing", "total", { items: [] }),
      // @ts-expect-error: "hello" is a workflow of greeter, not of orders
      () => client.run("orders", "hello", { who: "ana" }),
      // @ts-expect-error: qty must be a number
      () => client.run("orders", "total", { items: [{ sku: "tea", qty: "3" }] }),
      // @ts-expect-error: echo takes a string
      () => client.run("orders", "echo", 42),
    ];
    const codes: string[] = [];
    for (const refused of refusals) {
      try {
        await (await refused()).result({ timeoutMs: 5000 });
        codes.push("ran");
      } catch (error) {
        codes.push((error as { code: string }).code);
      }
    }
    // Unknown agent and workflow are refused by the server; a bad input without a schema is not
    // (the workflow fails on it), with one it is.
    expect(codes[0]).toBe("UNKNOWN_AGENT");
    expect(codes[1]).toBe("UNKNOWN_WORKFLOW");
    expect(codes[3]).toBe("INVALID_INPUT");
  });

  it("takes the agents as an object of definitions too, found by their names", async () => {
    const client = new CairnClient<{ shop: typeof live.orders; hello: typeof live.greeter }>({
      baseUrl: await serveAgents(),
    });
    const handle = await client.run("greeter", "hello", { who: "eve" });
    expectTypeOf(await handle.result()).toEqualTypeOf<string>();
    expect(await handle.result()).toBe("hello eve");
    // @ts-expect-error: agents are named by their definitions, not by the object's keys
    await expect(client.run("hello", "hello", { who: "eve" })).rejects.toMatchObject({ code: "UNKNOWN_AGENT" });
  });

  it("accepts any name and input, with unknown results, when not given the agents", async () => {
    const client = new CairnClient({ baseUrl: await serveAgents() });
    const handle = await client.run("greeter", "hello", { who: "bo" });
    const result = await handle.result();
    expectTypeOf(result).toEqualTypeOf<unknown>();
    expect(result).toBe("hello bo");
  });
});
