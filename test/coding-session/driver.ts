import type { StepRecord } from "../../src/index.ts";

export { approvePullRequest, latestRun, say, untilWaiting } from "../../examples/coding-session/session-client.ts";

/** Waits until a step matching `match` of the session's current run is running (started, not ended). */
export async function untilStepRuns(
  steps: () => Promise<StepRecord[]>,
  match: (step: StepRecord) => boolean,
  timeoutMs = 60_000,
): Promise<StepRecord> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const step = (await steps()).find((s) => match(s) && s.status === "started");
    if (step) return step;
    if (Date.now() > deadline) throw new Error("timed out waiting for the step to run");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The step is the run of the test suite (`sh test.sh`) in the sandbox. */
export const isTestRun = (step: StepRecord): boolean =>
  step.kind === ("sandbox" as StepRecord["kind"]) &&
  step.name === "exec:workspace" &&
  (step.args as { command?: unknown } | undefined)?.command === "sh test.sh";
