import type { RunEndData, TransitionEventData } from "../api/stream-events.ts";
import type { RunRecord, StepRecord, TransitionRecord } from "../core/records.ts";
import { isSettled, OWNED_STATES } from "../core/run-state.ts";
import type { Runtime } from "../runtime/runtime.ts";
import { type SseSend, Wakeup } from "./sse.ts";

/**
 * The events of one run (`GET /api/runs/:id/events`). The run may be executed by another process
 * sharing the database (`cairn serve` beside `cairn worker`), so transitions and steps are read
 * from the backend: the run is looked at every `pollIntervalMs`, and at once when this process
 * records one of its transitions. New transitions are sent in id order; steps are loaded after
 * each transition and, while a worker holds the run, every `stepPollMs`, and a step whose state
 * changed (started, attempt failed, ended, effect settled) is sent as a snapshot. Model output
 * (`model.*`) comes from `runtime.events`: only runs this process executes have any. The stream
 * ends with an `end` event once the run has settled, except on INTERRUPTED, which a worker's
 * recovery usually takes up again.
 *
 * An event id is the stream's position: `<transitionId>.<stepStamp>.<stepSeq>.<stepVersion>.<modelOffset>.<boot>`
 * — the last transition sent; the last step change sent, as (the time of its change in ms, its
 * seq, how many changes the step has had), which grows with every change a step goes through; the
 * next model event offset; and the server process (model offsets restart with it: from another
 * boot they count from 0). Resuming from an id sends the transitions after it, the steps whose
 * latest change comes after its step position, and the model events from its offset. (Step times
 * are the writers' clocks: a step change committed out of its time order — clocks of two
 * machines — can be missed by a resume; step events are snapshots, the next change of that step
 * brings it.)
 */

/** Where a step stands: the time of its latest change, its seq, and how many changes it has had. */
export interface StepPosition {
  stamp: number;
  seq: number;
  version: number;
}

/** Where a per-run stream stands. */
export interface RunCursor {
  transition: number;
  step: StepPosition;
  model: number;
}

/** The data of a `transition` event. */
export function transitionEventData(
  t: TransitionRecord,
  run: Pick<RunRecord, "agent" | "workflow">,
): TransitionEventData {
  return { ...t, state: t.to, agent: run.agent, workflow: run.workflow };
}

/** The id of an event at `cursor`. */
export function formatRunEventId(cursor: RunCursor, boot: string): string {
  const { stamp, seq, version } = cursor.step;
  return `${cursor.transition}.${stamp}.${seq}.${version}.${cursor.model}.${boot}`;
}

/** The cursor of a Last-Event-ID; the start for none or one that is not ours. */
export function parseRunEventId(text: string | undefined, boot: string): RunCursor {
  const match = text === undefined ? null : /^(\d+)\.(\d+)\.(\d+)\.(\d+)\.(\d+)\.([\w-]+)$/.exec(text.trim());
  if (!match) return { transition: 0, step: { stamp: 0, seq: 0, version: 0 }, model: 0 };
  return {
    transition: Number(match[1]),
    step: { stamp: Number(match[2]), seq: Number(match[3]), version: Number(match[4]) },
    model: match[6] === boot ? Number(match[5]) : 0,
  };
}

/** Options of {@link produceRunEvents}. */
export interface RunStreamOptions {
  runtime: Runtime;
  boot: string;
  /** @default 250 */
  pollIntervalMs: number;
  /** How often the steps of a run a worker holds are loaded. @default 500 */
  stepPollMs?: number;
}

/**
 * Sends the run's events from `cursor` on until the run settles — a terminal state other than
 * INTERRUPTED, or NEEDS_RECONCILIATION: then `end` — or `signal` fires.
 */
export async function produceRunEvents(
  options: RunStreamOptions,
  run: RunRecord,
  cursor: RunCursor,
  send: SseSend,
  signal: AbortSignal,
): Promise<void> {
  const { runtime, boot } = options;
  const runId = run.id;
  const stepPollMs = options.stepPollMs ?? 500;
  const id = () => formatRunEventId(cursor, boot);
  const wakeup = new Wakeup();
  const stopListening = runtime.onTransition((t) => {
    if (t.runId === runId) wakeup.wake();
  });
  const stopModel = new AbortController();
  const onAbort = () => stopModel.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  // The model events of runs this process executes. `runtime.events` ends when the run settles; a
  // run taken up again (an INTERRUPTED run resumed) is read again from where it stopped.
  let model: Promise<void> | undefined;
  const readModel = () => {
    model = (async () => {
      for await (const event of runtime.events(runId, { from: cursor.model, signal: stopModel.signal })) {
        cursor.model = event.offset + 1;
        // Transitions come from the backend (numbered, and seen whoever made them).
        if (event.type !== "transition") send({ id: id(), event: event.type, data: event });
      }
    })()
      .catch(() => {})
      .finally(() => {
        model = undefined;
      });
  };
  readModel();
  const seen = new Map<number, string>();
  let first = true;
  let stepsLoadedAt = 0;
  try {
    let current = run;
    while (!signal.aborted) {
      let moved = false;
      if (current.lastTransitionId > cursor.transition) {
        for (const t of await runtime.backend.listTransitions(runId)) {
          if (t.id <= cursor.transition) continue;
          cursor.transition = t.id;
          send({ id: id(), event: "transition", data: transitionEventData(t, current) });
          moved = true;
        }
      }
      // INTERRUPTED is settled but a worker's recovery usually takes it up again: keep watching.
      const ended = isSettled(current.state) && current.state !== "INTERRUPTED";
      const held = OWNED_STATES.has(current.state);
      if (first || moved || ended || (held && Date.now() - stepsLoadedAt >= stepPollMs)) {
        stepsLoadedAt = Date.now();
        sendSteps(await runtime.backend.loadSteps(runId), seen, first, cursor, send, id);
        first = false;
      }
      if (ended) {
        // What the model streamed is buffered in memory: let the reader hand it over, briefly.
        if (model) await Promise.race([model, new Promise((r) => setTimeout(r, 100))]);
        const data = { runId, state: current.state, pausedReason: current.pausedReason } satisfies RunEndData;
        send({ id: id(), event: "end", data });
        return;
      }
      if (model === undefined && !isSettled(current.state)) readModel();
      await wakeup.sleep(options.pollIntervalMs, signal);
      if (signal.aborted) return;
      current = await runtime.getRun(runId);
    }
  } finally {
    stopListening();
    signal.removeEventListener("abort", onAbort);
    stopModel.abort();
  }
}

/** Sends the steps whose state changed since last time, oldest change first. */
function sendSteps(
  steps: readonly StepRecord[],
  seen: Map<number, string>,
  first: boolean,
  cursor: RunCursor,
  send: SseSend,
  id: () => string,
): void {
  const changed: { step: StepRecord; at: StepPosition }[] = [];
  for (const step of steps) {
    const signature = signatureOf(step);
    if (seen.get(step.seq) === signature) continue;
    seen.set(step.seq, signature);
    const at = positionOf(step);
    // Resuming: what the cursor's position covers was sent on the earlier connection.
    if (first && compare(at, cursor.step) <= 0) continue;
    changed.push({ step, at });
  }
  changed.sort((a, b) => compare(a.at, b.at));
  for (const { step, at } of changed) {
    if (compare(at, cursor.step) > 0) cursor.step = at;
    send({ id: id(), event: "step", data: step });
  }
}

/** What distinguishes one state of a step from the next. */
function signatureOf(step: StepRecord): string {
  const { version, stamp } = positionOf(step);
  return `${version}|${stamp}|${step.status}|${step.effect?.status ?? ""}`;
}

/**
 * A step's latest change: its time (ms), its seq, and its version — the count of what has
 * happened to it (attempts begun and ended, the step ended, its effect settled), which every
 * change raises.
 */
export function positionOf(step: StepRecord): StepPosition {
  let stamp = Math.max(step.startedAt, step.endedAt ?? 0);
  let version = step.endedAt === null ? 0 : 1;
  for (const a of step.attempts) {
    stamp = Math.max(stamp, a.startedAt, a.endedAt ?? 0);
    version += a.endedAt === null ? 1 : 2;
  }
  if (step.effect) {
    stamp = Math.max(stamp, step.effect.intentAt, step.effect.settledAt ?? 0);
    if (step.effect.settledAt !== undefined) version += 1;
    if (step.effect.reconciliation !== undefined) version += 1;
  }
  return { stamp, seq: step.seq, version };
}

function compare(a: StepPosition, b: StepPosition): number {
  return a.stamp - b.stamp || a.seq - b.seq || a.version - b.version;
}
