import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  defineAgent,
  defineTool,
  ModelRequestError,
  ModelUnavailableError,
  REDACTED,
  type Runtime,
  ScriptedModel,
} from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

/** Everything the run has stored and what its export says, as one text to search. */
async function everythingStored(runtime: Runtime, runId: string): Promise<string> {
  const history = await runtime.history(runId);
  const signals = await runtime.backend.listSignals(runId);
  const contract = await runtime.exportRun(runId);
  return JSON.stringify({ history, signals, contract });
}

forEachBackend((under) => {
  const { runtimes } = under;

  describe("credentials are kept out of what a run stores", () => {
    it("redacts an API key a provider's error quotes, in the step, its attempts, the run's error and the export", async () => {
      const key = `sk-proj-${randomUUID().replaceAll("-", "")}`;
      let calls = 0;
      const model = new ScriptedModel({
        replies: [
          () => {
            calls++;
            if (calls === 1) {
              throw new ModelUnavailableError(
                `openai.chat answered 503: upstream refused Authorization: Bearer ${key}`,
                {
                  provider: "openai.chat",
                  status: 503,
                },
              );
            }
            throw new ModelRequestError(
              `openai.chat answered 401: Incorrect API key provided: ${key}. You can find your API key at https://platform.openai.com/account/api-keys.`,
              { provider: "openai.chat", status: 401 },
            );
          },
        ],
      });
      const agent = defineAgent({
        name: "leaky",
        tools: {},
        workflows: {
          async go(ctx) {
            return ctx.llm.generate({ prompt: "hello" });
          },
        },
      });
      const runtime = runtimes.make({
        agents: [agent],
        models: { default: model },
        modelRetry: { maximumAttempts: 3, initialIntervalMs: 1, jitter: 0 },
      });
      const handle = await runtime.run(agent, "go", null);
      const ended = await runtime.waitFor(handle.id, { timeoutMs: 10_000 });
      expect(ended.state).toBe("FAILED");
      expect(calls).toBe(2);
      expect(ended.error?.message).toBe(
        `openai.chat answered 401: Incorrect API key provided: ${REDACTED}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      );
      const [step] = (await runtime.history(handle.id)).steps;
      expect(step?.attempts.map((a) => a.error?.message)).toEqual([
        `openai.chat answered 503: upstream refused Authorization: Bearer ${REDACTED}`,
        ended.error?.message,
      ]);
      expect(await everythingStored(runtime, handle.id)).not.toContain(key);
    });

    it("journals a model request without the credentials it quotes; the model still gets it whole", async () => {
      const seen: string[] = [];
      const model = new ScriptedModel({
        replies: [
          (request) => {
            seen.push(request.prompt ?? "");
            return "ok";
          },
        ],
      });
      const agent = defineAgent({
        name: "prompted",
        tools: {},
        workflows: {
          async go(ctx, { header }: { header: string }) {
            return ctx.llm.generate({ prompt: `Call the API with ${header} and report back.` });
          },
        },
      });
      const runtime = runtimes.make({ agents: [agent], models: { default: model } });
      const header = "Authorization: Bearer abcdefghijklmnop123456";
      const handle = await runtime.run(agent, "go", { header });
      expect(await handle.result({ timeoutMs: 10_000 })).toBe("ok");
      expect(seen).toEqual([`Call the API with ${header} and report back.`]);
      const [step] = (await runtime.history(handle.id)).steps;
      expect(step?.args).toMatchObject({
        prompt: `Call the API with Authorization: Bearer ${REDACTED} and report back.`,
      });
    });
  });

  describe("ctx.secret", () => {
    function payments(seen: string[]) {
      return defineAgent({
        name: "payments",
        tools: {
          charge: defineTool({
            run: async (ctx, { secret }: { secret: string }) => {
              const value = await ctx.secret(secret);
              seen.push(value);
              return { charged: true, echo: `used ${value}` };
            },
          }),
          reject: defineTool({
            retry: { maximumAttempts: 1 },
            run: async (ctx, { secret }: { secret: string }) => {
              const value = await ctx.secret(secret);
              throw new Error(`the gateway refused credential ${value}`);
            },
          }),
        },
        workflows: {
          async go(ctx, { secret }: { secret: string }) {
            const charged = await ctx.tool("charge", { secret });
            let refused = "";
            try {
              await ctx.tool("reject", { secret });
            } catch (error) {
              refused = (error as Error).message;
            }
            return { charged, refused };
          },
        },
      });
    }

    it("resolves a secret from the runtime's provider at call time; it is never journaled nor exported", async () => {
      const value = `gw-${randomUUID()}`; // no known shape: only ctx.secret tells it is secret
      const seen: string[] = [];
      const asked: string[] = [];
      const agent = payments(seen);
      const runtime = runtimes.make({
        agents: [agent],
        secrets: (name) => {
          asked.push(name);
          return name === "GATEWAY_KEY" ? value : undefined;
        },
      });
      const handle = await runtime.run(agent, "go", { secret: "GATEWAY_KEY" });
      const output = await handle.result({ timeoutMs: 10_000 });
      expect(seen).toEqual([value]);
      expect(asked).toEqual(["GATEWAY_KEY", "GATEWAY_KEY"]);
      // The workflow gets what the journal keeps, as a replay would.
      expect(output).toEqual({
        charged: { charged: true, echo: `used ${REDACTED}` },
        refused: `tool "reject" failed after 1 attempt: the gateway refused credential ${REDACTED}`,
      });
      expect(await everythingStored(runtime, handle.id)).not.toContain(value);
    });

    it("reads the environment by default, and fails the tool at once naming the variable when there is none", async () => {
      const name = `CAIRN_TEST_SECRET_${randomUUID().slice(0, 8).toUpperCase()}`;
      const value = `env-${randomUUID()}`;
      process.env[name] = value;
      try {
        const seen: string[] = [];
        const agent = payments(seen);
        const runtime = runtimes.make({ agents: [agent] });
        const ok = await runtime.run(agent, "go", { secret: name });
        await ok.result({ timeoutMs: 10_000 });
        expect(seen).toEqual([value]);
        expect(await everythingStored(runtime, ok.id)).not.toContain(value);

        const missing = await runtime.run(agent, "go", { secret: `${name}_MISSING` });
        const ended = await runtime.waitFor(missing.id, { timeoutMs: 10_000 });
        expect(ended.state).toBe("FAILED");
        expect(ended.error?.code).toBe("TOOL_FAILED");
        expect(ended.error?.cause).toMatchObject({
          code: "UNKNOWN_SECRET",
          message: expect.stringContaining(`set the environment variable ${name}_MISSING`),
        });
        const [step] = (await runtime.history(missing.id)).steps;
        expect(step?.attempts).toHaveLength(1);
      } finally {
        delete process.env[name];
      }
    });
  });
});
