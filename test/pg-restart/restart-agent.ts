import { randomBytes } from "node:crypto";
import { appendFileSync } from "node:fs";
import { defineAgent, defineTool } from "../../src/index.ts";

/** Tools in one `chain` run. */
export const CHAIN_TOOLS = 10;

/** How long tool `n` of run `index` takes: 50 to 150 ms, the same on every execution. */
export function toolMs(index: number, n: number): number {
  return 50 + ((index * 37 + n * 53) % 101);
}

/** What tool `n` of run `index` contributes to the run's sum. */
export const toolValue = (index: number, n: number) => index * 1000 + n;

/** One line of the executions file, parsed. */
export interface Execution {
  runId: string;
  seq: number;
  attempt: number;
  /** Which execution: `<pid>-<random>`, also in the tool's result. */
  exec: string;
  phase: "start" | "end";
  at: number;
}

/** Parses the executions file (one line per start and per end of a tool execution). */
export function parseExecutions(text: string): Execution[] {
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [runId, seq, attempt, exec, phase, at] = line.split(" ");
      return {
        runId: runId ?? "",
        seq: Number(seq),
        attempt: Number(attempt),
        exec: exec ?? "",
        phase: phase as Execution["phase"],
        at: Number(at),
      };
    });
}

/**
 * The workload of the PostgreSQL restart test. Each tool execution appends
 * `<runId> <seq> <attempt> <exec> start|end <ms>` to `executions` (a file outside the database)
 * and returns `{ value, exec }`, so the journal says which execution's result it committed. Tools
 * ignore their abort signal, as a real side effect would: one in flight when its worker loses the
 * run still finishes.
 *
 * - `chain`: {@link CHAIN_TOOLS} tools one after another.
 * - `sleeper`: a tool, `ctx.sleep(sleepMs)` (a durable timer), a tool.
 * - `waiter`: a tool, `ctx.waitForSignal("go")`, a tool; the output carries the signal's `add`.
 */
export function restartAgent(executions: string) {
  const work = defineTool({
    run: async (ctx, { index, n }: { index: number; n: number }) => {
      const exec = `${process.pid}-${randomBytes(4).toString("hex")}`;
      const line = (phase: string) =>
        appendFileSync(executions, `${ctx.runId} ${ctx.seq} ${ctx.attempt} ${exec} ${phase} ${Date.now()}\n`);
      line("start");
      await new Promise((r) => setTimeout(r, toolMs(index, n)));
      line("end");
      return { value: toolValue(index, n), exec };
    },
  });
  return defineAgent({
    name: "restart_agent",
    tools: { work },
    workflows: {
      async chain(ctx, { index }: { index: number }) {
        let sum = 0;
        const execs: string[] = [];
        for (let n = 1; n <= CHAIN_TOOLS; n++) {
          const r = await ctx.tool("work", { index, n });
          sum += r.value;
          execs.push(r.exec);
        }
        return { index, sum, execs };
      },
      async sleeper(ctx, { index, sleepMs }: { index: number; sleepMs: number }) {
        const a = await ctx.tool("work", { index, n: 1 });
        await ctx.sleep(sleepMs);
        const b = await ctx.tool("work", { index, n: 2 });
        return { index, sum: a.value + b.value, execs: [a.exec, b.exec] };
      },
      async waiter(ctx, { index }: { index: number }) {
        const a = await ctx.tool("work", { index, n: 1 });
        const { add } = await ctx.waitForSignal<{ add: number }>("go");
        const b = await ctx.tool("work", { index, n: 2 });
        return { index, sum: a.value + b.value + add, execs: [a.exec, b.exec] };
      },
    },
  });
}
