import type { ToolApproval } from "../agent-definition.ts";
import type { PolicyCall } from "../policies.ts";
import type { StepKind } from "../records.ts";
import { waitCall } from "./calls/wait-call.ts";
import type { EnvelopeState } from "./envelope-state.ts";
import type { NeededApproval } from "./governance.ts";
import type { BegunStep } from "./replay-cursor.ts";

/**
 * The one path of every tool, model, domain, MCP and spawn call (DESIGN §6): the policies are
 * asked first (a denial ends the run BLOCKED); an approval they require, or the tool's `own`, is
 * a wait step taken before the call's own step. Both step numbers are taken now, so concurrent
 * calls replay in the same order whatever order their approvals come in. `call` makes the step,
 * given its number when it was taken here.
 */
export function governedCall<R>(
  x: EnvelopeState,
  kind: PolicyCall["kind"],
  stepKind: StepKind,
  name: string,
  args: unknown,
  own: ToolApproval | undefined,
  call: (begun: BegunStep | undefined) => Promise<R>,
): Promise<R> {
  let approval: NeededApproval | undefined;
  let approvalBegun: BegunStep | undefined;
  let begun: BegunStep | undefined;
  try {
    const asked = x.governance.ask(kind, name, args, x.cursor.seq + 1);
    approval = own
      ? { action: own.action ?? `${kind}:${name}`, approvers: own.approvers ?? [], expiresInMs: own.expiresInMs }
      : asked;
    if (approval) {
      approvalBegun = x.begin("wait", `approval:${approval.action}`);
      begun = x.begin(stepKind, name);
    }
  } catch (error) {
    return Promise.reject(error);
  }
  if (!approval || !approvalBegun) return call(undefined);
  const needed = approval;
  return waitCall(
    x,
    () =>
      x.waits.approval({
        action: needed.action,
        payload: args,
        approvers: needed.approvers,
        expiresInMs: needed.expiresInMs,
      }),
    approvalBegun,
  ).then(() => call(begun));
}
