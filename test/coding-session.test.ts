import { spawn } from "node:child_process";
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PullRequest } from "../examples/coding-session/forge.ts";
import { git } from "../examples/coding-session/git-remote.ts";
import { scriptedCoder } from "../examples/coding-session/scripted-coder.ts";
import { codingSessionAgent, type SessionOutput } from "../examples/coding-session/session.ts";
import { TranscriptStore } from "../examples/coding-session/transcript-store.ts";
import { Runtime, ScriptedModel, type StepRecord, silentLogger } from "../src/index.ts";
import type { DirectorySandbox, SandboxProvider } from "../src/sandbox.ts";
import { SqliteBackend } from "../src/sqlite.ts";
import { approvePullRequest, isTestRun, say, untilStepRuns, untilWaiting } from "./coding-session/driver.ts";
import {
  commandPids,
  deleteBehindItsBack,
  freezeBehindItsBack,
  makeRoot,
  makeWorld,
  processesUnder,
  provider,
  sandboxKind,
  sandboxPids,
  type World,
} from "./coding-session/fixture.ts";
import { until } from "./helpers/runtime-helpers.ts";

/**
 * The ten-step coding session (examples/coding-session) end to end, in real sandboxes (bubblewrap
 * where it works, local otherwise), on SQLite: a whole session to one pull request through a
 * continue-as-new and a lost answer; the deletion experiment (the sandbox deleted behind the
 * runtime's back in the middle of a turn); and a SIGKILL of the worker in the middle of a turn.
 */

const CHILD = join(import.meta.dirname, "coding-session", "session-child.ts");
const root = makeRoot("cairn-cs-");
const worlds: World[] = [];
const runtimes: Runtime[] = [];
let kind: "bubblewrap" | "local";
beforeAll(async () => {
  kind = await sandboxKind();
});
afterAll(async () => {
  await Promise.all(runtimes.map((r) => r.shutdown({ graceMs: 0 })));
  await Promise.all(worlds.map((w) => w.close()));
  rmSync(root, { recursive: true, force: true });
});

async function world(name: string, options: { slowTestSeconds?: number } = {}): Promise<World> {
  const made = await makeWorld(root, name, options);
  worlds.push(made);
  return made;
}

function session(w: World, options: Partial<Parameters<typeof codingSessionAgent>[0]> = {}) {
  const agent = codingSessionAgent({ remote: w.remote, forge: w.forge.url, dataDir: w.dataDir, ...options });
  const sandboxes = provider(kind, w.sandboxes);
  const runtime = new Runtime({
    agents: [agent],
    backend: new SqliteBackend({ path: join(w.dir, "cairn.db") }),
    logger: silentLogger,
    models: { coder: new ScriptedModel({ name: "scripted-coder", replies: [scriptedCoder] }) },
    sandbox: { provider: sandboxes, logDir: join(w.dir, "logs") },
  });
  runtimes.push(runtime);
  return { agent, runtime, sandboxes };
}

/** Files the session's branch holds on the remote, and its commits after main. */
async function branchOnRemote(w: World, branch: string) {
  const files = (await git(["--git-dir", w.remote, "ls-tree", "-r", "--name-only", branch])).split("\n");
  const commits = (await git(["--git-dir", w.remote, "log", "--format=%s", `main..${branch}`])).split("\n");
  return { files, commits: commits.reverse() };
}

/** Zero sandboxes held and zero processes of any left on the host. */
async function expectNothingLeft(w: World, sandboxes: SandboxProvider): Promise<void> {
  expect(await sandboxes.list()).toEqual([]);
  // A killed process stays in /proc until it is reaped: give the kills a moment to land.
  await until(() => processesUnder(w.sandboxes).length === 0, { timeoutMs: 10_000, what: "no process" }).catch(
    () => {},
  );
  const left = processesUnder(w.sandboxes).map((pid) => {
    try {
      return `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ")} (${readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.slice(0, 1)})`;
    } catch {
      return `${pid}: gone`;
    }
  });
  expect(left).toEqual([]);
}

const sandboxSteps = (steps: StepRecord[]) =>
  steps.filter((s) => (s.kind as string) === "sandbox").map((s) => `${s.name}${isTestRun(s) ? " (tests)" : ""}`);

describe("examples/coding-session", { timeout: 120_000 }, () => {
  it("a session of two turns, a continue-as-new and a lost answer: one pull request", async () => {
    const w = await world("full");
    const { agent, runtime, sandboxes } = session(w, { turnsPerRun: 2 });
    const input = { session: "text-utils", request: "Add a titleCase function with a test" };
    const first = await runtime.run(agent, "session", input, { key: "text-utils" });
    expect((await runtime.run(agent, "session", input, { key: "text-utils" })).id).toBe(first.id);

    expect(await say(runtime, first.id, "m2", { text: "Now add truncate(text, max) too" })).toMatchObject({
      runId: first.id,
      duplicate: false,
    });
    // The second turn is the run's last: it continues as new, and the successor waits.
    const { runId: second } = await say(runtime, first.id, "m2", { text: "Now add truncate(text, max) too" });
    expect(second).not.toBe(first.id);
    await say(runtime, first.id, "m3", { action: "open_pull_request" });
    w.forge.dropCreateResponses(1);
    await approvePullRequest(runtime, first.id);
    const done = await runtime.waitFor(second, { timeoutMs: 60_000 });
    expect(done.state, JSON.stringify(done.error)).toBe("COMPLETED");
    const output = done.output as unknown as SessionOutput;

    // One pull request, made by the first (answerless) request, found by the effect's status.
    expect(w.forge.pulls()).toHaveLength(1);
    expect(w.forge.createRequests).toBe(1);
    const pull = output.pullRequest as PullRequest;
    expect(pull).toMatchObject({ number: 1, head: "agent/text-utils", base: "main", headSha: output.sha });
    expect(output).toMatchObject({ ended: "pull_request", turns: 2, rebuilds: 0, branch: "agent/text-utils" });
    const remote = await branchOnRemote(w, "agent/text-utils");
    expect(remote.commits).toEqual([expect.stringMatching(/^turn 1: /), expect.stringMatching(/^turn 2: /)]);
    expect(remote.files).toEqual(expect.arrayContaining(["src/title-case.js", "src/truncate.js"]));

    // The chain: the first run continued as the second; the repeated message was dropped there.
    const run1 = await runtime.getRun(first.id);
    expect(run1).toMatchObject({ state: "COMPLETED", continuedTo: second });
    const h1 = await runtime.history(first.id);
    const h2 = await runtime.history(second);
    expect(h2.run.input).toMatchObject({ resume: { turns: 2, seen: ["m2"], sha: expect.any(String) } });
    expect(h2.steps.filter((s) => s.name === "signal:user_message")).toHaveLength(2);
    expect(sandboxSteps(h2.steps)).toEqual([]);
    // Each turn's commands ran in the sandbox, as steps: prepare, the model's calls, the commit.
    expect(sandboxSteps(h1.steps)).toEqual([
      "sandbox:workspace",
      "exec:workspace",
      "exec:workspace",
      "writeFile:workspace",
      "writeFile:workspace",
      "exec:workspace (tests)",
      "exec:workspace",
      "writeFile:workspace",
      "writeFile:workspace",
      "exec:workspace (tests)",
      "exec:workspace",
      "destroy:workspace",
    ]);
    // A checkpoint's record is the commit and the transcript's key, nothing more.
    const checkpoints = h1.steps.filter((s) => s.name === "checkpoint").map((s) => s.result);
    expect(checkpoints).toHaveLength(2);
    for (const c of checkpoints) expect(Object.keys(c as object).sort()).toEqual(["sha", "transcriptKey"]);
    const transcript = await new TranscriptStore(join(w.dataDir, "transcripts")).get(output.transcriptKey);
    expect(transcript.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      input.request,
      "Now add truncate(text, max) too",
    ]);

    // The effect: its first attempt lost the answer; the status query found the pull request.
    const opened = h2.steps.find((s) => s.name === "open_pull_request") as StepRecord;
    expect(opened.attempts[0]?.error).toBeDefined();
    expect(opened.effect).toMatchObject({
      idempotencyKey: "coding_session/open_pull_request:text-utils",
      status: "applied",
      settledBy: "status",
      receipt: { pull: 1 },
    });
    await expectNothingLeft(w, sandboxes);
  });

  // killed: the machine shut down (its processes killed, its folder removed): the command ends and
  // its sandbox is gone. frozen: the machine went silent (its processes stopped, its folder
  // removed): nothing ends, and only the missed heartbeat can tell.
  it.each(["killed", "frozen"] as const)(
    "the deletion experiment (%s): the sandbox deleted mid-turn is rebuilt from the last push",
    async (how) => {
      // The integration suite takes about 3 s, printing as it goes: long enough to delete mid-turn.
      const w = await world(`deletion-${how}`, { slowTestSeconds: 3 });
      const heartbeatTimeoutMs = 5_000;
      const { agent, runtime, sandboxes } = session(w, { heartbeatTimeoutMs });
      const input = { session: "deleted", request: "Add a titleCase function with a test" };
      const run = await runtime.run(agent, "session", input, { key: `deleted-${how}` });
      await say(runtime, run.id, "m2", { text: "Now add truncate(text, max) too" });
      const steps = async () => (await runtime.history(run.id)).steps;
      const firstTests = (await steps()).find(isTestRun) as StepRecord;
      // Turn 2's test run is going: the sandbox is deleted under it.
      const running = await untilStepRuns(steps, (s) => isTestRun(s) && s.seq > firstTests.seq);
      const before = await sandboxes.find(`${run.id}/workspace`);
      const lostId = before?.info.id as string;
      const workspace = (before as unknown as { hostWorkspace: string }).hostWorkspace;
      // The step's start is recorded before its command starts: wait for the command's processes.
      await until(() => commandPids(workspace).length > 0, { timeoutMs: 20_000, what: "the tests' processes" });
      const killed = (how === "killed" ? deleteBehindItsBack : freezeBehindItsBack)(workspace);
      const deletedAt = Date.now();
      expect(killed.length).toBeGreaterThan(0);

      await say(runtime, run.id, "m3", { action: "open_pull_request" });
      await approvePullRequest(runtime, run.id);
      const done = await runtime.waitFor(run.id, { timeoutMs: 60_000 });
      expect(done.state, JSON.stringify(done.error)).toBe("COMPLETED");
      const output = done.output as unknown as SessionOutput;
      expect(output).toMatchObject({ ended: "pull_request", turns: 2, rebuilds: 1 });
      expect(w.forge.pulls()).toHaveLength(1);

      // The command under which the sandbox vanished failed as lost, well before its 2 h limit.
      const history = await runtime.history(run.id);
      const lost = history.steps.find((s) => s.seq === running.seq) as StepRecord;
      expect(lost.status).toBe("failed");
      expect(lost.attempts.map((a) => a.error?.code)).toEqual(["SANDBOX_LOST", "SANDBOX_LOST"]);
      expect(lost.attempts[0]?.error?.message).toMatch(
        how === "killed" ? /gone.*SIGKILL|SIGKILL.*gone/ : /no heartbeat for 5000 ms/,
      );
      const detectedAfterMs = (lost.attempts[0]?.endedAt ?? 0) - deletedAt;
      console.log(`deletion experiment (${kind}, ${how}): loss detected ${detectedAfterMs} ms after the deletion`);
      // Then a new sandbox, filled from the last pushed commit, and turn 2 again from its start.
      const after = history.steps.filter((s) => s.seq > running.seq);
      expect(sandboxSteps(after).slice(0, 2)).toEqual(["sandbox:workspace", "exec:workspace"]);
      const rebuild = after.find((s) => s.name === "exec:workspace") as StepRecord;
      const turn1 = history.steps.filter((s) => s.name === "checkpoint")[0]?.result as { sha: string };
      expect((rebuild.args as { command: string }).command).toContain(`'${turn1.sha}'`);
      const rebuilt = after.find((s) => s.name === "sandbox:workspace")?.result as { id: string };
      expect(rebuilt.id).not.toBe(lostId);
      const retried = after.find((s) => s.kind === "llm") as StepRecord;
      const retriedMessages = (retried.args as { messages: { role: string; content: string }[] }).messages;
      expect(retriedMessages.at(-1)?.content).toContain(`rebuilt from ${turn1.sha}`);

      // The remote holds two commits, turn 2's made once, after the rebuild.
      const remote = await branchOnRemote(w, "agent/deleted");
      expect(remote.commits).toEqual([expect.stringMatching(/^turn 1: /), expect.stringMatching(/^turn 2: /)]);
      expect(remote.files).toEqual(expect.arrayContaining(["src/title-case.js", "src/truncate.js"]));
      // The run never left its states for the loss: no INTERRUPTED, no FAILED, just its pauses.
      const states = history.transitions.map((t) => t.to);
      expect(states).not.toContain("INTERRUPTED");
      expect(states).not.toContain("FAILED");
      expect(states.at(-1)).toBe("COMPLETED");
      // The contract's isolation section: one sandbox name, two sandboxes, the loss on both attempts
      // of the failed step, no restore (no snapshot: the workflow rebuilt it), deleted at the end.
      const { isolation } = await runtime.exportRun(run.id);
      expect(isolation.isolated).toBe(kind === "bubblewrap");
      expect(isolation.sandboxes).toHaveLength(1);
      const [box] = isolation.sandboxes;
      expect(box).toMatchObject({ name: "workspace", label: `${run.id}/workspace`, restores: [], snapshots: [] });
      expect(box?.ids).toEqual([lostId, rebuilt.id]);
      expect(box?.losses.map((l) => `${l.seq}.${l.attempt}`)).toEqual([`${running.seq}.1`, `${running.seq}.2`]);
      // The local provider enforces no network policy, and says so: network true.
      expect(box?.info).toMatchObject({ id: rebuilt.id, network: kind === "local", kind });
      expect(box?.destroyedBy).toBe("destroy");
      await expectNothingLeft(w, sandboxes);
    },
  );

  it("a silent session ends by its timer; its sandbox held no key and reached no network", async () => {
    const w = await world("silent");
    const { agent, runtime, sandboxes } = session(w, { silenceMs: 3_000 });
    process.env.CODING_SESSION_TEST_KEY = "sk-test-never-in-the-sandbox";
    try {
      const run = await runtime.run(agent, "session", { session: "silent", request: "Add a titleCase function" });
      await untilWaiting(runtime, run.id, "signal");
      // While it waits: the sandbox's environment is git's settings and nothing of the host's.
      const box = (await sandboxes.find(`${run.id}/workspace`)) as DirectorySandbox;
      const env = (await box.exec("env")).tail;
      expect(env).not.toContain("sk-test-never-in-the-sandbox");
      const names = env
        .trim()
        .split("\n")
        .map((line) => line.split("=")[0]);
      expect(names.filter((n) => !/^(GIT_|PATH$|HOME$|PWD$|OLDPWD$|SHLVL$|_$)/.test(n ?? ""))).toEqual([]);
      if (kind === "bubblewrap") {
        // Not even the forge on the host's loopback is reachable.
        const port = new URL(w.forge.url).port;
        const reach = await box.exec(
          `node -e "require('net').connect(${port},'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(3))"`,
        );
        expect(reach.exitCode).toBe(3);
      }
      const done = await runtime.waitFor(run.id, { timeoutMs: 30_000 });
      expect(done.output).toMatchObject({ ended: "silence", turns: 1, pullRequest: null });
      expect(w.forge.pulls()).toEqual([]);
      await expectNothingLeft(w, sandboxes);
    } finally {
      delete process.env.CODING_SESSION_TEST_KEY;
    }
  });

  it("released while waiting: no sandbox held between turns, the next turn restores the snapshot", async () => {
    const w = await world("released");
    const { agent, runtime, sandboxes } = session(w, { releaseWhileWaiting: true });
    const run = await runtime.run(agent, "session", { session: "released", request: "Add a titleCase function" });
    await untilWaiting(runtime, run.id, "signal");
    expect(await sandboxes.list()).toEqual([]);
    await say(runtime, run.id, "m2", { text: "Now add truncate(text, max) too" });
    await say(runtime, run.id, "m3", { action: "open_pull_request" });
    await approvePullRequest(runtime, run.id);
    const done = await runtime.waitFor(run.id, { timeoutMs: 60_000 });
    expect(done.output).toMatchObject({ ended: "pull_request", turns: 2, rebuilds: 0 });
    const remote = await branchOnRemote(w, "agent/released");
    expect(remote.files).toEqual(expect.arrayContaining(["src/title-case.js", "src/truncate.js"]));
    const { isolation } = await runtime.exportRun(run.id);
    const box = isolation.sandboxes[0];
    // Two releases (after each turn) and one restore: the first call of turn 2.
    expect(box?.snapshots).toHaveLength(2);
    expect(box?.restores).toHaveLength(1);
    expect(box?.ids).toHaveLength(2);
    await expectNothingLeft(w, sandboxes);
  });

  it("a cancelled session: the runtime deletes its sandbox", async () => {
    const w = await world("cancelled");
    const { agent, runtime, sandboxes } = session(w);
    const run = await runtime.run(agent, "session", { session: "cancelled", request: "Add a titleCase function" });
    await untilWaiting(runtime, run.id, "signal");
    expect(await sandboxes.list()).toHaveLength(1);
    await runtime.cancel(run.id, { by: "test", reason: "changed my mind" });
    const done = await runtime.waitFor(run.id, { timeoutMs: 30_000 });
    expect(done.state).toBe("CANCELLED");
    await until(async () => (await sandboxes.list()).length === 0, { timeoutMs: 20_000, what: "no sandbox" });
    await expectNothingLeft(w, sandboxes);
    const { isolation } = await runtime.exportRun(run.id);
    expect(isolation.sandboxes[0]?.destroyedBy).toBe("cleanup");
  });

  it("SIGKILL of the worker mid-turn: a new worker finds the sandbox by its label and finishes", async () => {
    const w = await world("crash", { slowTestSeconds: 3 });
    const start = child([w.dir, w.forge.url, kind, "start"]);
    const backend = new SqliteBackend({ path: join(w.dir, "cairn.db") });
    await backend.init();
    try {
      const runId = await start.runId;
      const running = await untilStepRuns(() => backend.loadSteps(runId), isTestRun);
      const held = (await provider(kind, w.sandboxes).find(`${runId}/workspace`)) as DirectorySandbox;
      await until(() => sandboxPids(held.hostWorkspace).length > 0, {
        timeoutMs: 20_000,
        what: "the tests' processes",
      });
      start.kill();
      const first = await start.done;
      expect(first.signal).toBe("SIGKILL");

      const finish = child([w.dir, w.forge.url, kind, "finish"]);
      const result = await finish.done;
      expect(result.code, result.stderr).toBe(0);
      const end = JSON.parse(result.stdout.trim().split("\n").at(-1) ?? "{}");
      expect(end.state, JSON.stringify(end.error)).toBe("COMPLETED");
      expect(end.output).toMatchObject({ ended: "pull_request", turns: 1 });
      expect(w.forge.pulls()).toHaveLength(1);

      const steps = await backend.loadSteps(runId);
      const tests = steps.find((s) => s.seq === running.seq) as StepRecord;
      expect(tests.status).toBe("completed");
      expect(tests.attempts.map((a) => a.error?.name ?? "ok")).toEqual(["AttemptInterrupted", "ok"]);
      // The sandbox the first worker made is the one the second used: found by its label.
      const made = steps.filter((s) => s.name === "sandbox:workspace").map((s) => (s.result as { id: string }).id);
      expect(made).toEqual([held?.info.id]);
      expect(end.output.rebuilds).toBe(0);
      const transitions = (await backend.listTransitions(runId)).map((t) => t.to);
      expect(transitions).toContain("INTERRUPTED");
      await expectNothingLeft(w, provider(kind, w.sandboxes));
    } finally {
      await backend.close();
    }
  });
});

interface Child {
  runId: Promise<string>;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
  kill(): void;
}

function child(args: string[]): Child {
  const proc = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let found: (id: string) => void = () => {};
  const runId = new Promise<string>((resolve) => (found = resolve));
  proc.stdout.on("data", (d) => {
    stdout += d;
    const id = /^run (\S+)$/m.exec(stdout)?.[1];
    if (id) found(id);
  });
  proc.stderr.on("data", (d) => (stderr += d));
  const timer = setTimeout(() => proc.kill("SIGKILL"), 100_000);
  const done = new Promise<Awaited<Child["done"]>>((resolve, reject) => {
    proc.on("error", reject);
    proc.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { runId, done, kill: () => proc.kill("SIGKILL") };
}
