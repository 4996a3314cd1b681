import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { defineAgent, defineTool } from "../src/agent/define.ts";
import type { RunHandle } from "../src/runtime/run-handle.ts";
import { Runtimes } from "./helpers/runtime-helpers.ts";

/*
 * Compile-time checks: `npx tsc -p tsconfig.json --noEmit` fails if any `@ts-expect-error` below
 * is not needed, i.e. if the typed API stops catching the mistake. The same code also runs, so
 * the file asserts at run time that the mistakes are caught there too.
 */

const runtimes = new Runtimes();
afterEach(() => runtimes.closeAll());

const typed = defineAgent({
  name: "typed",
  tools: {
    add: defineTool({
      input: z.object({ a: z.number(), b: z.number() }),
      run: (_ctx, { a, b }) => ({ sum: a + b }),
    }),
    greet: defineTool({ run: (_ctx, { who }: { who: string }) => `hello ${who}` }),
  },
  workflows: {
    async sum(ctx, { a, b }: { a: number; b: number }) {
      const { sum } = await ctx.tool("add", { a, b });
      expectTypeOf(sum).toEqualTypeOf<number>();
      const greeting = await ctx.tool("greet", { who: "types" });
      expectTypeOf(greeting).toEqualTypeOf<string>();
      return { sum, greeting };
    },
    async unknownTool(ctx) {
      // @ts-expect-error "ad" is not a tool of this agent
      return ctx.tool("ad", { a: 1, b: 2 });
    },
    async wrongArgs(ctx) {
      // @ts-expect-error `a` must be a number
      return ctx.tool("add", { a: "1", b: 2 });
    },
    async missingArg(ctx) {
      // @ts-expect-error `who` is required
      return ctx.tool("greet", {});
    },
  },
});

// Not run on every backend (test/helpers/backends.ts): these are compile-time checks; the runs here only
// show that a typed call runs, which the runtime tests cover on each backend.
describe("types", () => {
  it("types tool results from the tool definition", () => {
    type AddResult = Awaited<ReturnType<(typeof typed.tools)["add"]["run"]>>;
    expectTypeOf<AddResult>().toEqualTypeOf<{ sum: number }>();
    expectTypeOf<Awaited<ReturnType<(typeof typed.tools)["greet"]["run"]>>>().toEqualTypeOf<string>();
  });

  it("types a run handle's result from the workflow's output", async () => {
    const rt = runtimes.make({ agents: [typed] });
    const handle = await rt.run(typed, "sum", { a: 2, b: 3 });
    expectTypeOf(handle).toEqualTypeOf<RunHandle<{ sum: number; greeting: string }>>();
    const output = await handle.result();
    expect(output).toEqual({ sum: 5, greeting: "hello types" });
  });

  it("rejects an unknown workflow and wrong input at compile time, and at run time", async () => {
    const rt = runtimes.make({ agents: [typed] });
    // @ts-expect-error "no_such_workflow" is not a workflow of `typed`
    await expect(rt.run(typed, "no_such_workflow", {})).rejects.toMatchObject({ code: "UNKNOWN_WORKFLOW" });
    // @ts-expect-error `a` must be a number
    const bad = await rt.run(typed, "sum", { a: "2", b: 3 });
    expect((await rt.waitFor(bad.id)).error?.code).toBe("INVALID_INPUT");
  });

  it("catches at run time what the compiler would have caught", async () => {
    const rt = runtimes.make({ agents: [typed] });
    const codes = await Promise.all(
      (["unknownTool", "wrongArgs"] as const).map(
        async (name) => (await rt.waitFor((await rt.run(typed, name, {})).id)).error?.code,
      ),
    );
    expect(codes).toEqual(["UNKNOWN_TOOL", "INVALID_INPUT"]);
  });
});
