import type { RunRecord, Runtime, WaitRecord } from "../../src/index.ts";

/**
 * What a person does to a coding session, from code (the demo, the tests): find the session's
 * current run (a `continueAsNew` chain moves on), send it a message when it waits for one, approve
 * its pull request. Under the CLI the same is `cairn signal` and `cairn approve`.
 */

/** The newest run of the chain that starts at `runId`. */
export async function latestRun(rt: Runtime, runId: string): Promise<RunRecord> {
  let run = await rt.getRun(runId);
  while (run.continuedTo) run = await rt.getRun(run.continuedTo);
  return run;
}

/** Waits until the session's current run has an open wait of `kind`; returns the run and the wait. */
export async function untilWaiting(
  rt: Runtime,
  firstRunId: string,
  kind: "signal" | "approval",
  timeoutMs = 60_000,
): Promise<{ runId: string; wait: WaitRecord }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await latestRun(rt, firstRunId);
    if (["FAILED", "BLOCKED", "CANCELLED"].includes(run.state)) {
      throw new Error(`the session's run ${run.id} ended ${run.state}: ${JSON.stringify(run.error)}`);
    }
    const wait = (await rt.waits(run.id)).find((w) => w.kind === kind && w.status === "open");
    if (wait) return { runId: run.id, wait };
    if (Date.now() > deadline) throw new Error(`no open ${kind} wait on run ${run.id} (${run.state})`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Sends a `user_message` (its id as the signal's message id) once the session waits for one. */
export async function say(
  rt: Runtime,
  firstRunId: string,
  id: string,
  message: { text?: string; action?: "open_pull_request" | "end" },
): Promise<{ runId: string; duplicate: boolean }> {
  const { runId } = await untilWaiting(rt, firstRunId, "signal");
  const sent = await rt.signal(runId, "user_message", { id, ...message }, { messageId: id });
  return { runId, duplicate: sent.duplicate };
}

/** Approves the session's pull request once it is asked for. */
export async function approvePullRequest(rt: Runtime, firstRunId: string): Promise<WaitRecord> {
  const { runId, wait } = await untilWaiting(rt, firstRunId, "approval");
  const details = wait.details as { digest: string };
  return rt.approve(runId, wait.id, { by: "reviewer", digest: details.digest });
}
