import type { ChildHandle } from "../../context.ts";
import type { ParentClosePolicy } from "../../records.ts";
import { toJson } from "../../serialize.ts";
import { storedTraceContext } from "../../telemetry/trace-context.ts";
import type { EnvelopeState } from "../envelope-state.ts";
import { governedCall } from "../governed-call.ts";
import { runStep } from "../journaled-step.ts";
import type { BegunStep } from "../replay-cursor.ts";
import { settleChild } from "../wait-steps.ts";
import { waitCall } from "./wait-call.ts";

/**
 * `ctx.spawn(agent, workflow, input)`: a `child` step that creates the child run (its id is
 * `<run id>.<seq>`, so a replay finds the same child), governed like any call. The handle's
 * `result()` is a wait step per run of the child's chain.
 */
export function spawnCall(
  x: EnvelopeState,
  agent: string,
  workflow: string,
  input: unknown,
  policy: ParentClosePolicy,
): Promise<ChildHandle> {
  return governedCall(x, "spawn", "child", `${agent}.${workflow}`, input, undefined, (approved) => {
    let begun: BegunStep;
    try {
      begun = approved ?? x.begin("child", `${agent}.${workflow}`);
    } catch (error) {
      return Promise.reject(error);
    }
    return spawnStep(x, agent, workflow, input, policy, begun);
  });
}

function spawnStep(
  x: EnvelopeState,
  agent: string,
  workflow: string,
  input: unknown,
  policy: ParentClosePolicy,
  begun: BegunStep,
): Promise<ChildHandle> {
  const childId = `${x.run.id}.${begun.seq}`;
  const json =
    toJson(
      input,
      `the input of child ${agent}.${workflow} (run ${x.run.id}, step ${begun.seq})`,
      x.host.maxPayloadBytes,
    ) ?? null;
  const handle: ChildHandle = {
    runId: childId,
    // A child that continued as new is followed along its chain, one wait step per run.
    result: async () => {
      for (let runId = childId; ; ) {
        const ending = await waitCall(x, () => x.waits.child(runId));
        if (ending.state !== "COMPLETED" || !ending.continuedTo) return settleChild(childId, ending);
        runId = ending.continuedTo;
      }
    },
  };
  return runStep(
    x,
    "child",
    `${agent}.${workflow}`,
    { agent, workflow, input: json, parentClosePolicy: policy },
    {
      policy: undefined,
      startToCloseTimeoutMs: undefined,
      heartbeatTimeoutMs: undefined,
      run: async (attempt) => {
        await x.host.spawn({
          trace: attempt.trace ? storedTraceContext(attempt.trace.context) : undefined,
          id: childId,
          agent,
          workflow,
          input: json,
          parentClosePolicy: policy,
          budget: x.governance.governor.remaining(x.host.now()),
        });
        return { runId: childId };
      },
      effect: undefined,
    },
    begun,
  ).then(() => handle);
}
