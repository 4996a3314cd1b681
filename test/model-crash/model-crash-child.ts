/**
 * A child process for the model crash test: a workflow of three model calls on a SQLite file,
 * against the fake model server the test runs (OpenAI chat-completions format).
 *
 *   node --import tsx test/model-crash/model-crash-child.ts <db> <serverUrl> start
 *   node --import tsx test/model-crash/model-crash-child.ts <db> <serverUrl> resume
 *
 * `start` starts the run and waits for it (the test SIGKILLs it mid-call); `resume` starts a
 * worker that notices the dead process, recovers the run and drives it to its end. On a clean end
 * it prints `{"runId", "state", "output"}` as JSON.
 */
import { defineAgent, Runtime, silentLogger } from "../../src/index.ts";
import { openai } from "../../src/llm/providers.ts";
import { SqliteBackend } from "../../src/sqlite.ts";

const [db, url, mode] = process.argv.slice(2);
if (!db || !url || (mode !== "start" && mode !== "resume")) {
  console.error("usage: model-crash-child.ts <db> <serverUrl> start|resume");
  process.exit(2);
}

const agent = defineAgent({
  name: "model_crash",
  tools: {},
  workflows: {
    async three(ctx) {
      const a = await ctx.llm.generate({ prompt: "first" });
      const b = await ctx.llm.generate({ prompt: "second" });
      const c = await ctx.llm.generate({ prompt: "third" });
      return [a, b, c];
    },
  },
});

const options = {
  agents: [agent],
  backend: new SqliteBackend({ path: db }),
  logger: silentLogger,
  models: { default: openai("gpt-4o-mini", { baseURL: `${url}/v1`, apiKey: "test" }) },
  modelRetry: { initialIntervalMs: 10 },
};

if (mode === "start") {
  // A lease far longer than the test: only noticing that this process is gone can recover the run.
  const runtime = new Runtime({ ...options, worker: { leaseMs: 600_000 } });
  const run = await runtime.run(agent, "three", {}, { key: "model-crash" });
  const output = await run.result();
  console.log(JSON.stringify({ runId: run.id, state: "COMPLETED", output }));
  await runtime.shutdown();
} else {
  const runtime = new Runtime({
    ...options,
    worker: { leaseMs: 1000, pollIntervalMs: 50, detectDeadLocalOwners: true },
  });
  await runtime.start();
  const [run] = await runtime.listRuns({ agent: "model_crash" });
  if (!run) throw new Error("no run to resume");
  // INTERRUPTED is terminal for waitFor; the worker's own recovery moves it on, so wait past it.
  let done = await runtime.waitFor(run.id, { timeoutMs: 20_000, pollIntervalMs: 50 });
  while (done.state === "INTERRUPTED") {
    await new Promise((r) => setTimeout(r, 20));
    done = await runtime.waitFor(run.id, { timeoutMs: 20_000, pollIntervalMs: 50 });
  }
  console.log(JSON.stringify({ runId: done.id, state: done.state, output: done.output }));
  await runtime.shutdown();
}
