/**
 * A process of the trace continuity test: an OpenTelemetry SDK exporting every span to a file,
 * and a runtime on a SQLite file.
 *
 *   node --import tsx test/tracing/traced-child.ts <db> <spans> <dir> start    starts the run; its
 *       second tool SIGKILLs the process in its first attempt
 *   node --import tsx test/tracing/traced-child.ts <db> <spans> <dir> resume   takes the run over
 *       (its owner's process is gone) and prints how it ended
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { defineAgent, defineTool, Runtime, silentLogger } from "../../src/index.ts";
import { SqliteBackend } from "../../src/sqlite.ts";
import { FileSpanExporter } from "./file-span-exporter.ts";

const [db = "", spans = "", dir = "", mode] = process.argv.slice(2);
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
trace.setGlobalTracerProvider(
  new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(new FileSpanExporter(spans))] }),
);

const agent = defineAgent({
  name: "traced_crash",
  tools: {
    first: defineTool({ run: async () => ({ ok: 1 }) }),
    crash: defineTool({
      run: async () => {
        const marker = join(dir, "crashed");
        if (!existsSync(marker)) {
          writeFileSync(marker, String(process.pid));
          process.kill(process.pid, "SIGKILL");
        }
        return { ok: 2 };
      },
    }),
    last: defineTool({ run: async () => ({ ok: 3 }) }),
  },
  workflows: {
    async chain(ctx, _input: null) {
      await ctx.tool("first", {});
      await ctx.tool("crash", {});
      return ctx.tool("last", {});
    },
  },
});

if (mode === "start") {
  const runtime = new Runtime({ agents: [agent], backend: new SqliteBackend({ path: db }), logger: silentLogger });
  const run = await runtime.run(agent, "chain", null);
  console.log(JSON.stringify({ runId: run.id }));
  await run.result();
  throw new Error("unreachable: the crash tool SIGKILLs this process");
} else {
  const runtime = new Runtime({
    agents: [agent],
    backend: new SqliteBackend({ path: db }),
    logger: silentLogger,
    worker: { leaseMs: 1000, pollIntervalMs: 50, detectDeadLocalOwners: true },
  });
  await runtime.start();
  const [run] = await runtime.listRuns({ agent: "traced_crash" });
  if (!run) throw new Error("no run to resume");
  let done = await runtime.waitFor(run.id, { timeoutMs: 20_000, pollIntervalMs: 50 });
  while (done.state === "INTERRUPTED") done = await runtime.waitFor(run.id, { timeoutMs: 20_000, pollIntervalMs: 50 });
  console.log(JSON.stringify({ runId: run.id, state: done.state, output: done.output }));
  await runtime.shutdown();
}
