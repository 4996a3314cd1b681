import { RunNotFoundError, RunNotOpenError, SignalInboxFullError } from "../../core/errors.ts";
import type { RunRecord, SignalRecord, TransitionRecord, WaitRecord } from "../../core/records.ts";
import type { SignalRequest } from "../contract/signal-store.ts";
import { hasEnded, Plan, resolveInPlan } from "./plan.ts";

/** The rules of signals, shared by every backend (see `wait-rules.ts`). */

/**
 * The wait a signal resolves: the oldest open wait of its name whose timeout has not passed (a
 * wait whose timeout passed is timed out, even before a worker recorded it so), else undefined.
 */
export function signalTarget(openWaits: readonly WaitRecord[], request: SignalRequest): WaitRecord | undefined {
  return openWaits
    .filter(
      (w) =>
        w.status === "open" &&
        w.kind === "signal" &&
        w.name === request.name &&
        (w.dueAt === null || w.dueAt > request.at),
    )
    .sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : 1))[0];
}

/**
 * `deliverSignal`: the backend loads the run, the inbox entry with the same message id (if any)
 * and the run's open waits of kind `signal` with this name; and, when `request.maxUnread` is set,
 * no entry has the message id and no open wait takes the signal ({@link signalTarget}), the
 * number of the run's unread signals (`unread`). A signal that would go to an inbox holding
 * `maxUnread` unread ones is refused (`SignalInboxFullError`, nothing written); a repeat of a
 * stored one is still acknowledged, and a signal a wait takes is always delivered.
 */
export function planSignal(input: {
  run: RunRecord | undefined;
  request: SignalRequest;
  existing: SignalRecord | undefined;
  openWaits: readonly WaitRecord[];
  unread?: number | undefined;
}): {
  plan: Plan;
  duplicate: boolean;
  signal: SignalRecord;
  deliveredTo: string | null;
  run: RunRecord;
  transition: TransitionRecord | undefined;
} {
  const { run, request } = input;
  const plan = new Plan();
  if (!run) throw new RunNotFoundError(`no run with id "${request.runId}"; list runs with \`cairn runs\``);
  if (input.existing) {
    return {
      plan,
      duplicate: true,
      signal: input.existing,
      deliveredTo: input.existing.consumedBy,
      run,
      transition: undefined,
    };
  }
  // An INTERRUPTED run is resumed and may wait for the signal later: it keeps it in its inbox.
  if (hasEnded(run.state)) {
    throw new RunNotOpenError(`run ${run.id} is ${run.state}; it takes no more signals`);
  }
  const wait = signalTarget(input.openWaits, request);
  if (!wait && request.maxUnread !== undefined) {
    if (input.unread === undefined) throw new RangeError("planSignal needs the run's unread count to check maxUnread");
    if (input.unread >= request.maxUnread) {
      throw new SignalInboxFullError(
        `run ${run.id}'s inbox holds ${input.unread} signals it has not read, its limit (maxUnreadSignals ${request.maxUnread}): signal "${request.name}" was not stored. A run reads a signal when it waits for one of its name (ctx.waitForSignal); send what it waits for, or cancel it. A workflow that takes a stream of signals should read each as it comes and carry its state over with ctx.continueAsNew(state) now and then; or raise the runtime's maxUnreadSignals`,
        { unread: input.unread, limit: request.maxUnread },
      );
    }
  }
  const signal: SignalRecord = {
    runId: run.id,
    messageId: request.messageId,
    name: request.name,
    payload: request.payload,
    receivedAt: request.at,
    consumedBy: wait ? wait.id : null,
  };
  plan.signals.push(signal);
  if (wait) {
    resolveInPlan(
      plan,
      run,
      wait,
      { outcome: "signalled", value: request.payload, messageId: request.messageId, by: request.actor, at: request.at },
      { actor: request.actor, reason: `signal "${request.name}" received (${wait.id})`, versions: request.versions },
    );
  }
  return {
    plan,
    duplicate: false,
    signal,
    deliveredTo: wait ? wait.id : null,
    run: plan.current(run),
    transition: plan.transitions[0],
  };
}
