import { describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type ChatMessage,
  defineAgent,
  defineTool,
  type GenerateRequest,
  NonRetryableError,
  type RunEvent,
  ScriptedModel,
  type ScriptedTurn,
} from "../src/index.ts";
import { forEachBackend } from "./helpers/backends.ts";
import { deferred, forever } from "./helpers/runtime-helpers.ts";

/**
 * The agent loop (`ctx.agentLoop`, DESIGN §5): each model call and each tool call is a step; a
 * refused call goes back to the model as a tool error; the limits (max turns, a repeated failing
 * call) end the loop with their own errors; long outputs are kept out of the conversation and
 * paged; a long conversation is compacted by a summarising call; a tool that needs an approval
 * pauses the loop; the model's text streams to `runtime.events`.
 */

/** The tool messages of the conversation a model call was given. */
function toolMessages(request: GenerateRequest): Extract<ChatMessage, { role: "tool" }>[] {
  return (request.messages ?? []).filter((m): m is Extract<ChatMessage, { role: "tool" }> => m.role === "tool");
}

function researcher(name: string, log: string[], extra: Record<string, ReturnType<typeof defineTool>> = {}) {
  return defineAgent({
    name,
    tools: {
      search: defineTool({
        description: "Searches the notes for a query.",
        input: z.object({ query: z.string().min(1) }),
        run: async (_ctx, { query }) => {
          log.push(`search ${query}`);
          return { hits: [`note about ${query}`] };
        },
      }),
      flaky: defineTool({
        input: z.object({ id: z.number() }),
        run: async (_ctx, { id }) => {
          log.push(`flaky ${id}`);
          throw new NonRetryableError(`record ${id} is locked`);
        },
      }),
      dump: defineTool({
        run: async () => {
          log.push("dump");
          return `BEGIN ${"x".repeat(30_000)} MIDDLE ${"y".repeat(30_000)} END`;
        },
      }),
      ...extra,
    },
    workflows: {
      async research(
        ctx,
        input: { task: string; maxTurns?: number; compaction?: { thresholdTokens: number; keepMessages: number } },
      ) {
        const result = await ctx.agentLoop({
          system: "You are a careful researcher.",
          prompt: input.task,
          ...(input.maxTurns ? { maxTurns: input.maxTurns } : {}),
          ...(input.compaction ? { compaction: input.compaction } : {}),
        });
        return { text: result.text, turns: result.turns, toolCalls: result.toolCalls, compactions: result.compactions };
      },
    },
  });
}

forEachBackend((under) => {
  const { runtimes } = under;

  describe("the agent loop", () => {
    it("runs model and tool calls as steps, offers the tools' zod schemas as JSON Schema, and replays without calling again", async () => {
      const log: string[] = [];
      const requests: GenerateRequest[] = [];
      const script: ScriptedTurn[] = [
        { text: "Let me look.", toolCalls: [{ name: "search", args: { query: "cairn" } }] },
        { text: "The notes say: note about cairn." },
      ];
      const model = new ScriptedModel({
        replies: [
          (request, call) => {
            requests.push(request);
            return script[call] as ScriptedTurn;
          },
        ],
      });
      const rt = runtimes.make({ agents: [researcher("loop_basic", log)], models: { default: model } });
      const handle = await rt.run("loop_basic", "research", { task: "What is cairn?" });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("COMPLETED");
      expect(run.output).toEqual({ text: "The notes say: note about cairn.", turns: 2, toolCalls: 1, compactions: 0 });
      expect(log).toEqual(["search cairn"]);
      const search = requests[0]?.tools?.find((t) => t.name === "search");
      expect(search).toMatchObject({
        description: "Searches the notes for a query.",
        inputSchema: { type: "object", properties: { query: { type: "string", minLength: 1 } }, required: ["query"] },
      });
      expect(toolMessages(requests[1] as GenerateRequest)).toEqual([
        expect.objectContaining({
          name: "search",
          content: JSON.stringify({ hits: ["note about cairn"] }),
          isError: false,
        }),
      ]);
      const steps = (await rt.history(handle.id)).steps;
      expect(steps.map((s) => `${s.kind}:${s.name}`)).toEqual(["llm:default", "tool:search", "llm:default"]);
      expect(run.usage?.modelCalls).toBe(2);
      expect(run.usage?.toolCalls).toBe(1);
    });

    it("answers an unknown tool and bad arguments with tool errors the model can act on; neither runs a step", async () => {
      const log: string[] = [];
      const requests: GenerateRequest[] = [];
      const script: ScriptedTurn[] = [
        {
          toolCalls: [
            { name: "web_search", args: { query: "x" } },
            { name: "search", args: { query: 42 } },
          ],
        },
        { toolCalls: [{ name: "search", args: { query: "fixed" } }] },
        { text: "done" },
      ];
      const model = new ScriptedModel({
        replies: [
          (request, call) => {
            requests.push(request);
            return script[call] as ScriptedTurn;
          },
        ],
      });
      const rt = runtimes.make({ agents: [researcher("loop_refused", log)], models: { default: model } });
      const handle = await rt.run("loop_refused", "research", { task: "find x" });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("COMPLETED");
      const [unknown, invalid] = toolMessages(requests[1] as GenerateRequest);
      expect(unknown).toMatchObject({ name: "web_search", isError: true });
      expect(unknown?.content).toContain('there is no tool "web_search"');
      expect(unknown?.content).toContain("search");
      expect(invalid).toMatchObject({ name: "search", isError: true });
      expect(invalid?.content).toContain("invalid arguments for search");
      expect(invalid?.content).toContain("query");
      expect(log).toEqual(["search fixed"]);
      const steps = (await rt.history(handle.id)).steps;
      expect(steps.filter((s) => s.kind === "tool").map((s) => s.name)).toEqual(["search"]);
    });

    it("ends with MaxTurnsExceededError after maxTurns model calls", async () => {
      const log: string[] = [];
      const model = new ScriptedModel({
        replies: [(_r, call) => ({ toolCalls: [{ name: "search", args: { query: `q${call}` } }] })],
      });
      const rt = runtimes.make({ agents: [researcher("loop_turns", log)], models: { default: model } });
      const handle = await rt.run("loop_turns", "research", { task: "never done", maxTurns: 3 });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("MAX_TURNS_EXCEEDED");
      expect(run.error?.message).toContain("maxTurns 3");
      expect(model.calls).toBe(3);
      expect(log).toEqual(["search q0", "search q1", "search q2"]);
    });

    it("stops a model that repeats the same failing call, but lets it try other arguments", async () => {
      const log: string[] = [];
      const script: ScriptedTurn[] = [
        { toolCalls: [{ name: "flaky", args: { id: 1 } }] },
        { toolCalls: [{ name: "flaky", args: { id: 2 } }] },
        { toolCalls: [{ name: "flaky", args: { id: 1 } }] },
        { toolCalls: [{ name: "flaky", args: { id: 1 } }] },
        { text: "unreachable" },
      ];
      const model = new ScriptedModel({ replies: script });
      const rt = runtimes.make({ agents: [researcher("loop_stuck", log)], models: { default: model } });
      const handle = await rt.run("loop_stuck", "research", { task: "unlock" });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("FAILED");
      expect(run.error?.code).toBe("AGENT_LOOP_STUCK");
      expect(run.error?.message).toContain("flaky");
      expect(run.error?.message).toContain("3 times");
      expect(run.error?.message).toContain("record 1 is locked");
      expect(log).toEqual(["flaky 1", "flaky 2", "flaky 1", "flaky 1"]);
      expect(model.calls).toBe(4);
    });

    it("keeps an oversized output out of the conversation and lets the model page through it", async () => {
      const log: string[] = [];
      const requests: GenerateRequest[] = [];
      const model = new ScriptedModel({
        replies: [
          (r, call) => {
            requests.push(r);
            if (call === 0) return { toolCalls: [{ name: "dump", args: {} }] };
            if (call === 1) {
              const seen = toolMessages(r)[0]?.content ?? "";
              const offset = Number(/"offset": (\d+)/.exec(seen)?.[1]);
              return {
                toolCalls: [{ name: "read_output", args: { ref: "out-1", offset: offset + 25_000, length: 20 } }],
              };
            }
            return { text: `read: ${toolMessages(r).at(-1)?.content}` };
          },
        ],
      });
      const rt = runtimes.make({ agents: [researcher("loop_big", log)], models: { default: model } });
      const handle = await rt.run("loop_big", "research", { task: "dump it" });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("COMPLETED");
      const shown = toolMessages(requests[1] as GenerateRequest)[0]?.content ?? "";
      expect(shown.length).toBeLessThan(8000 + 300);
      expect(shown.startsWith("BEGIN x")).toBe(true);
      expect(shown.endsWith("y END")).toBe(true);
      expect(shown).toContain("read_output");
      expect(shown).not.toContain("MIDDLE");
      expect(requests[1]?.tools?.map((t) => t.name)).toContain("read_output");
      // 4,800 shown + 25,000 further on: the page straddles the middle marker.
      const text = (run.output as { text: string }).text;
      expect(text).toContain("out-1 characters 29800–29820 of 60018");
      // The whole output is in the tool's step: nothing was lost.
      const dump = (await rt.history(handle.id)).steps.find((s) => s.name === "dump");
      expect(String(dump?.result).length).toBe(60_018);
      expect(log).toEqual(["dump"]);
    });

    it("compacts a long conversation with a summarising model call and keeps the last messages verbatim", async () => {
      const log: string[] = [];
      const requests: GenerateRequest[] = [];
      const model = new ScriptedModel({
        replies: [
          (r) => {
            requests.push(r);
            if (r.system?.startsWith("You compress conversations")) return "SUMMARY: searched a, b and c.";
            // Counted from what ran: compaction folds the earlier results into the summary.
            const searches = log.length;
            if (searches < 3) return { toolCalls: [{ name: "search", args: { query: "abc"[searches] as string } }] };
            return { text: `answer after ${searches} results` };
          },
        ],
      });
      const rt = runtimes.make({ agents: [researcher("loop_compact", log)], models: { default: model } });
      const handle = await rt.run("loop_compact", "research", {
        task: "research a, b and c in depth please",
        compaction: { thresholdTokens: 15, keepMessages: 2 },
      });
      const run = await rt.waitFor(handle.id);
      expect(run.error).toBeUndefined();
      expect(run.state).toBe("COMPLETED");
      const summaries = requests.filter((r) => r.system?.startsWith("You compress conversations"));
      expect(summaries.length).toBeGreaterThanOrEqual(1);
      expect(summaries[0]?.prompt).toContain("research a, b and c in depth please");
      const after = requests[requests.indexOf(summaries[0] as GenerateRequest) + 1];
      expect(after?.messages?.[0]?.content).toBe("Summary of the conversation so far:\nSUMMARY: searched a, b and c.");
      // The kept tail never starts with a tool result cut from its call.
      expect(after?.messages?.[1]?.role).not.toBe("tool");
      expect((run.output as { compactions: number }).compactions).toBe(summaries.length);
      const llmSteps = (await rt.history(handle.id)).steps.filter((s) => s.kind === "llm");
      expect(llmSteps.length).toBe(requests.length);
    });

    it("pauses for a tool's approval bound to the call's arguments; a denial goes back to the model", async () => {
      const log: string[] = [];
      const publish = defineTool({
        input: z.object({ title: z.string() }),
        approval: { expiresInMs: 60_000, approvers: ["editor"] },
        run: async (_ctx, { title }) => {
          log.push(`publish ${title}`);
          return "published";
        },
      });
      const requests: GenerateRequest[] = [];
      const model = new ScriptedModel({
        replies: [
          (r) => {
            requests.push(r);
            const results = toolMessages(r);
            if (results.length === 0) return { toolCalls: [{ name: "publish", args: { title: "Q3" } }] };
            if (results.length === 1 && results[0]?.isError)
              return { toolCalls: [{ name: "publish", args: { title: "Q3 (revised)" } }] };
            return { text: `outcome: ${results.map((m) => m.content).join(" | ")}` };
          },
        ],
      });
      const rt = runtimes.make({ agents: [researcher("loop_approval", log, { publish })], models: { default: model } });
      const handle = await rt.run("loop_approval", "research", { task: "publish the report" });
      const first = await waitForApproval(rt, handle.id);
      expect(first.payload).toEqual({ title: "Q3" });
      await rt.deny(handle.id, first.id, { by: "editor", digest: first.digest, note: "wrong numbers" });
      const second = await waitForApproval(rt, handle.id, first.id);
      expect(second.payload).toEqual({ title: "Q3 (revised)" });
      await rt.approve(handle.id, second.id, { by: "editor", digest: second.digest });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("COMPLETED");
      const text = (run.output as { text: string }).text;
      expect(text).toContain("not approved");
      expect(text).toContain("wrong numbers");
      expect(text).toContain("published");
      expect(log).toEqual(["publish Q3 (revised)"]);
    });

    it("is stopped by governance, not handed back to the model: a budget on model calls ends it BLOCKED", async () => {
      const log: string[] = [];
      const model = new ScriptedModel({
        replies: [(_r, call) => ({ toolCalls: [{ name: "search", args: { query: `q${call}` } }] })],
      });
      const rt = runtimes.make({ agents: [researcher("loop_budget", log)], models: { default: model } });
      const handle = await rt.run("loop_budget", "research", { task: "go" }, { budget: { modelCalls: 2 } });
      const run = await rt.waitFor(handle.id);
      expect(run.state).toBe("BLOCKED");
      expect(run.error?.code).toBe("BUDGET_EXCEEDED");
      expect(model.calls).toBe(2);
    });

    it("resumes mid-conversation after the process stops: recorded model and tool calls are not made again", async () => {
      const backend = under.backend();
      const log: string[] = [];
      const entered = deferred();
      const hang = defineTool({
        run: async () => {
          log.push("hang");
          entered.resolve();
          return forever;
        },
      });
      const quick = defineTool({ run: async () => "quick" });
      const script: ScriptedTurn[] = [
        { toolCalls: [{ name: "search", args: { query: "first" } }] },
        { toolCalls: [{ name: "slow", args: {} }] },
        { text: "finished" },
      ];
      const first = new ScriptedModel({ replies: script });
      const rt1 = runtimes.make({
        backend,
        agents: [researcher("loop_resume", log, { slow: hang })],
        models: { default: first },
      });
      const handle = await rt1.run("loop_resume", "research", { task: "two steps" });
      await entered.promise;
      await rt1.shutdown({ graceMs: 0 });
      expect((await backend.getRun(handle.id))?.state).toBe("INTERRUPTED");
      const second = new ScriptedModel({ replies: [script[2] as ScriptedTurn] });
      const rt2 = runtimes.make({
        backend,
        agents: [researcher("loop_resume", log, { slow: quick })],
        models: { default: second },
      });
      await rt2.resume(handle.id);
      const run = await rt2.waitFor(handle.id);
      expect(run.state).toBe("COMPLETED");
      expect((run.output as { text: string }).text).toBe("finished");
      expect(first.calls).toBe(2);
      expect(second.calls).toBe(1);
      expect(log).toEqual(["search first", "hang"]);
    });
  });

  describe("the run's event stream", () => {
    it("streams model text in order and ends when the run completes; a retried call tells consumers to clear", async () => {
      let attempts = 0;
      const model = {
        name: "flaky-stream",
        async generate(_request: GenerateRequest, options: { onText?: (t: string) => void }) {
          attempts++;
          options.onText?.("Partial ");
          if (attempts === 1) throw new Error("connection reset mid-stream");
          options.onText?.("answer.");
          return {
            text: "Partial answer.",
            finishReason: "stop" as const,
            usage: { inputTokens: 3, outputTokens: 2 },
            model: "flaky",
          };
        },
      };
      const agent = defineAgent({
        name: "streamer",
        tools: {},
        workflows: {
          async go(ctx, _input: null) {
            return ctx.llm.generate({ prompt: "say it" });
          },
        },
      });
      const rt = runtimes.make({ agents: [agent], models: { default: model }, modelRetry: { initialIntervalMs: 1 } });
      const handle = await rt.run("streamer", "go", null);
      const events: RunEvent[] = [];
      for await (const event of rt.events(handle.id)) events.push(event);
      const kinds = events
        .filter((e) => e.type !== "transition")
        .map((e) => (e.type === "model.text" ? `text:${e.text}` : e.type));
      expect(kinds).toEqual([
        "step.start",
        "model.start",
        "text:Partial ",
        "model.end",
        "step.end",
        // Said as soon as the attempt failed, before the backoff: the kind is the model call's.
        "step.retry",
        "step.start",
        "model.retry",
        "model.start",
        "text:Partial ",
        "text:answer.",
        "model.end",
        "step.end",
      ]);
      const retry = events.find((e) => e.type === "model.retry");
      expect(retry).toMatchObject({ attempt: 2, error: "connection reset mid-stream" });
      const stepRetry = events.find((e) => e.type === "step.retry");
      expect(stepRetry).toMatchObject({ kind: "llm", attempt: 1, paused: false });
      expect(stepRetry?.type === "step.retry" && stepRetry.error).toContain("connection reset mid-stream");
      expect(events.filter((e) => e.type === "step.end").map((e) => e.type === "step.end" && e.status)).toEqual([
        "failed",
        "completed",
      ]);
      expect(events.map((e) => e.offset)).toEqual(events.map((_, i) => i));
      expect(events.at(-1)).toMatchObject({ type: "transition", to: "COMPLETED" });
      // A late reader starts where it asks and ends at once: the run has ended.
      const late: RunEvent[] = [];
      for await (const event of rt.events(handle.id, { from: events.length - 2 })) late.push(event);
      expect(late.map((e) => e.offset)).toEqual([events.length - 2, events.length - 1]);
    });
  });
});

async function waitForApproval(
  rt: { waits(runId: string): Promise<{ id: string; kind: string; status: string; details: unknown }[]> },
  runId: string,
  after?: string,
): Promise<{ id: string; payload: unknown; digest: string }> {
  for (let i = 0; i < 500; i++) {
    const wait = (await rt.waits(runId)).find((w) => w.kind === "approval" && w.status === "open" && w.id !== after);
    if (wait) {
      const details = wait.details as { payload: unknown; digest: string };
      return { id: wait.id, payload: details.payload, digest: details.digest };
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no open approval on run ${runId}`);
}
