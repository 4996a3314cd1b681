import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { type ChatMessage, defineAgent, type GenerateRequest, ScriptedModel } from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";

/**
 * MCP tools in the agent loop, against a real MCP server from the npm registry
 * (@modelcontextprotocol/server-everything over stdio): the server's tools are offered to the
 * model as `<server>__<tool>` with their JSON schemas, each call is a `tool` step, and a call the
 * server answers with an error goes back to the model without a retry.
 */

// The package has no "main"/"exports" to resolve, only a bin: its entry by path.
const everything = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

const agent = defineAgent({
  name: "mcp_user",
  tools: {},
  workflows: {
    async ask(ctx, { task }: { task: string }) {
      const result = await ctx.agentLoop({ prompt: task, mcp: ["everything"] });
      return result.text;
    },
  },
});

function toolResults(request: GenerateRequest): Extract<ChatMessage, { role: "tool" }>[] {
  return (request.messages ?? []).filter((m): m is Extract<ChatMessage, { role: "tool" }> => m.role === "tool");
}

// One backend is enough: the MCP calls are ordinary tool steps, which every backend stores alike
// (the conformance and agent-loop suites run on all three); the server costs a process per test.
forEachBackend(
  (under) => {
    describe("MCP tools in the agent loop", () => {
      it("offers the server's tools, runs each call as a step, and hands a server-side error back to the model", async () => {
        const requests: GenerateRequest[] = [];
        const model = new ScriptedModel({
          replies: [
            (request, call) => {
              requests.push(request);
              if (call === 0) {
                return {
                  toolCalls: [
                    { name: "everything__echo", args: { message: "durable hello" } },
                    { name: "everything__get-sum", args: { a: 2, b: 40 } },
                    { name: "everything__get-sum", args: { a: "two" } },
                  ],
                };
              }
              return {
                text: toolResults(request)
                  .map((m) => `${m.isError ? "ERR" : "OK"} ${m.content}`)
                  .join("\n"),
              };
            },
          ],
        });
        const rt = under.runtimes.make({
          agents: [agent],
          models: { default: model },
          mcp: { everything: { command: process.execPath, args: [everything, "stdio"] } },
        });
        const handle = await rt.run("mcp_user", "ask", { task: "echo and add" });
        const run = await rt.waitFor(handle.id, { timeoutMs: 30_000 });
        expect(run.state).toBe("COMPLETED");
        const echo = requests[0]?.tools?.find((t) => t.name === "everything__echo");
        expect(echo?.inputSchema).toMatchObject({ type: "object", properties: { message: { type: "string" } } });
        expect(echo?.inputSchema).not.toHaveProperty("$schema");
        const lines = String(run.output).split("\n");
        expect(lines[0]).toBe("OK Echo: durable hello");
        expect(lines[1]).toBe("OK The sum of 2 and 40 is 42.");
        expect(lines[2]).toMatch(/^ERR .*get-sum/);
        const steps = (await rt.history(handle.id)).steps.filter((s) => s.kind === "tool");
        expect(steps.map((s) => [s.name, s.status, s.attempts.length])).toEqual([
          ["everything__echo", "completed", 1],
          ["everything__get-sum", "completed", 1],
          ["everything__get-sum", "failed", 1],
        ]);
        expect(steps[0]?.result).toBe("Echo: durable hello");
      });

      it("refuses a loop that names an MCP server the runtime does not have", async () => {
        const model = new ScriptedModel({ replies: ["unused"] });
        const rt = under.runtimes.make({ agents: [agent], models: { default: model } });
        const handle = await rt.run("mcp_user", "ask", { task: "x" });
        const run = await rt.waitFor(handle.id);
        expect(run.state).toBe("FAILED");
        expect(run.error?.code).toBe("UNKNOWN_MCP_SERVER");
        expect(run.error?.message).toContain("new Runtime({ mcp: { everything: { command: ... } } })");
        expect(model.calls).toBe(0);
      });
    });
  },
  { only: ["sqlite"] },
);
