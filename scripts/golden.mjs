#!/usr/bin/env node
/**
 * Writes the golden journals of test/golden/: one run contract (`cairn.run-contract/1`, as
 * `cairn export` writes it) per scenario of each example in examples/. test/golden.test.ts replays
 * them through the examples' code as it is now (`replayHistories`), so a change that would strand
 * runs recorded by an earlier version fails `npm test`.
 *
 *   node scripts/golden.mjs        write test/golden/*.json (commit them)
 *
 * Run it when a change to an example is meant to be incompatible with the runs it recorded (and
 * say so in the commit): the old files are the evidence that older runs replay, so do not rewrite
 * them for a compatible change.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { register } from "tsx/esm/api";

register();
const root = fileURLToPath(new URL("..", import.meta.url));
const out = join(root, "test/golden");
const bankDir = mkdtempSync(join(tmpdir(), "cairn-golden-bank-"));
process.env.BANK_DB = join(bankDir, "bank.db");

const { Runtime, InMemoryBackend, approvalDigest, silentLogger } = await import("../src/index.ts");

/** Waits until `read()` gives something `ok` accepts. */
async function until(read, ok) {
  for (let i = 0; i < 1000; i++) {
    const value = await read();
    if (ok(value)) return value;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error("golden: a run did not get where the scenario expected");
}

const waitsOf = (rt, id, n) =>
  until(
    () => rt.waits(id),
    (w) => w.length >= n,
  );

/** Each example, its agent, the workflow, the input and how the scenario drives the run. */
const SCENARIOS = [
  {
    name: "report-builder.build",
    module: "examples/report-builder.ts",
    agent: (m) => m.reportBuilder,
    workflow: "build",
    input: { quarter: "2026-Q3" },
  },
  {
    name: "report-builder-decorators.build",
    module: "examples/report-builder-decorators.ts",
    agent: (m) => m.ReportBuilderClassic,
    workflow: "build",
    input: { quarter: "2026-Q2" },
  },
  {
    name: "research-agent.answer",
    module: "examples/research-agent/research.ts",
    agent: (m) => m.researcher,
    workflow: "answer",
    input: { question: "How does a durable runtime avoid paying twice after a crash?" },
  },
  {
    name: "money-transfer.transfer",
    module: "examples/money-transfer/transfer.ts",
    agent: (m) => m.moneyTransfer,
    workflow: "transfer",
    input: { transferId: "golden-1", from: "alice", to: "bob", amount: 2_500 },
  },
  {
    // Paused on the approval: the history of a run still open when a new version is deployed.
    name: "expense-approval.submit.paused",
    module: "examples/expense-approval.ts",
    agent: (m) => m.expenses,
    workflow: "submit",
    input: { employee: "ana", amount: 420, purpose: "client dinner" },
    async drive(rt, id) {
      await waitsOf(rt, id, 1);
      await rt.answer(id, "w2", { costCenter: "CC-1001" }, { by: "ana" });
      await waitsOf(rt, id, 2);
      await until(
        () => rt.getRun(id),
        (run) => run.state === "PAUSED",
      );
      return false;
    },
  },
  {
    name: "expense-approval.submit",
    module: "examples/expense-approval.ts",
    agent: (m) => m.expenses,
    workflow: "submit",
    input: { employee: "ana", amount: 420, purpose: "client dinner" },
    async drive(rt, id) {
      await waitsOf(rt, id, 1);
      await rt.answer(id, "w2", { costCenter: "CC-1001" }, { by: "ana" });
      await waitsOf(rt, id, 2);
      const digest = approvalDigest({ employee: "ana", amount: 420, costCenter: "CC-1001" });
      await rt.approve(id, "w3", { by: "finance-lead", digest });
      return true;
    },
  },
];

mkdirSync(out, { recursive: true });
try {
  for (const scenario of SCENARIOS) {
    const module = await import(join(root, scenario.module));
    const { models, domains } = module.runtimeOptions ?? {};
    const rt = new Runtime({
      agents: [scenario.agent(module)],
      backend: new InMemoryBackend(),
      logger: silentLogger,
      ...(models ? { models } : {}),
      ...(domains ? { domains } : {}),
    });
    await rt.start();
    const agentName = rt.agents[0].name;
    const handle = await rt.run(agentName, scenario.workflow, scenario.input);
    const ends = scenario.drive ? await scenario.drive(rt, handle.id) : true;
    if (ends) {
      const run = await rt.waitFor(handle.id);
      if (run.state !== "COMPLETED") throw new Error(`golden: ${scenario.name} ended ${run.state}`);
    }
    const contract = await rt.exportRun(handle.id);
    await rt.shutdown();
    writeFileSync(join(out, `${scenario.name}.json`), `${JSON.stringify(contract, null, 2)}\n`);
    console.log(
      `wrote test/golden/${scenario.name}.json (${contract.journal.steps.length} steps, ${contract.run.state})`,
    );
  }
  // In the repository's JSON format, so that `npm run lint` passes on them as written.
  execFileSync(join(root, "node_modules/.bin/biome"), ["format", "--write", out], { stdio: "inherit" });
} finally {
  rmSync(bankDir, { recursive: true, force: true });
}
process.exit(0);
