import { afterEach, describe, expect, it } from "vitest";
import { InMemoryBackend } from "../src/backend/memory/memory-backend.ts";
import { silentLogger } from "../src/core/logger.ts";
import { defineAgent, defineTool } from "../src/index.ts";
import { Runtime } from "../src/runtime/runtime.ts";
import { createServer } from "../src/server/app.ts";
import { withoutStacks } from "../src/server/error-stacks.ts";
import { untilState } from "./helpers/runtime-helpers.ts";
import { TOKEN_CONFIGS, TOKENS } from "./helpers/server-fixtures.ts";

/**
 * Stack traces name the server's files: stored with the errors, sent over HTTP to admins only
 * (issue 21). A run that fails in a tool (its attempts' errors, the step's, the run's with its
 * cause) is read by a viewer and by an admin through every route and the event stream.
 */

const breaking = defineAgent({
  name: "breaking",
  tools: {
    explode: defineTool({
      retry: { maximumAttempts: 2, initialIntervalMs: 1 },
      run: async () => {
        throw new Error("the disk is full");
      },
    }),
  },
  workflows: {
    async go(ctx, _input: null) {
      try {
        await ctx.tool("explode", {});
      } catch (cause) {
        throw new Error("could not write the report", { cause });
      }
      return "never";
    },
  },
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe("stack traces over HTTP", () => {
  it("are stored, and sent to admins only: runs, steps, effects, waits, the export and the events", async () => {
    const runtime = new Runtime({ agents: [breaking], backend: new InMemoryBackend(), logger: silentLogger });
    const server = createServer(runtime, { tokens: TOKEN_CONFIGS, logger: silentLogger, pollIntervalMs: 20 });
    closers.push(async () => {
      server.close();
      await runtime.shutdown({ graceMs: 0 });
    });
    const handle = await runtime.run("breaking", "go", null);
    await untilState(runtime.backend, handle.id, "FAILED");
    const stored = await runtime.history(handle.id);
    expect(stored.run.error?.stack).toMatch(/could not write the report\n\s+at /);
    expect(stored.run.error?.cause?.stack).toContain("the disk is full");
    expect(stored.steps[0]?.attempts[0]?.error?.stack).toContain("the disk is full");

    const read = async (token: keyof typeof TOKENS, path: string) => {
      const response = await server.app.request(path, { headers: { Authorization: `Bearer ${TOKENS[token]}` } });
      expect(response.status, path).toBe(200);
      return response.text();
    };
    const paths = ["runs", "transitions", "steps", "effects", "waits", "contract", "events"].map((p) =>
      p === "runs" ? `/api/runs/${handle.id}` : `/api/runs/${handle.id}/${p}`,
    );
    paths.push("/api/runs");
    for (const path of paths) {
      const text = await read("viewer", path);
      expect(text, path).not.toMatch(/"stack"|\.ts:\d+|node:internal/);
    }
    const viewerRun = JSON.parse(await read("viewer", `/api/runs/${handle.id}`)).run;
    expect(viewerRun.error).toMatchObject({ name: "Error", message: "could not write the report" });
    expect(viewerRun.error.cause.message).toContain("the disk is full");
    const viewerSteps = JSON.parse(await read("operator", `/api/runs/${handle.id}/steps`)).steps;
    expect(viewerSteps[0].attempts).toHaveLength(2);
    expect(viewerSteps[0].attempts[0].error.message).toContain("the disk is full");

    // An admin gets them, everywhere.
    for (const path of [
      `/api/runs/${handle.id}`,
      `/api/runs/${handle.id}/steps`,
      `/api/runs/${handle.id}/contract`,
      `/api/runs/${handle.id}/events`,
    ]) {
      expect(await read("admin", path), path).toMatch(/"stack":"Error: /);
    }
  });
});

describe("withoutStacks", () => {
  it("drops the stack of every error-shaped object, copying only what changes", () => {
    const data = { keep: { list: [1, 2] }, stack: ["a", "b"] };
    const value = {
      data,
      error: { name: "Error", message: "m", stack: "Error: m\n at x", cause: { name: "E", message: "c", stack: "s" } },
      list: [{ name: "Error", message: "m", stack: "s", code: "X" }],
      ...JSON.parse('{"__proto__":{"name":"Error","message":"m","stack":"s"}}'),
    };
    const out = withoutStacks(value);
    expect(out.data).toBe(data);
    expect(out.error).toEqual({ name: "Error", message: "m", cause: { name: "E", message: "c" } });
    expect(out.list).toEqual([{ name: "Error", message: "m", code: "X" }]);
    expect(JSON.stringify(out)).toContain('"__proto__":{"name":"Error","message":"m"}');
    expect(value.error.stack).toBe("Error: m\n at x");
  });
});
