import { useEffect } from "preact/hooks";
import { describeRateLimit, type RunRecord, type StepRecord, type TransitionRecord } from "../../src/api/http-api.ts";
import { type LiveStatus, subscribe } from "./api.ts";
import { type Data, PARTS, type Part } from "./run-parts.ts";
import type { SlotWaitEvent, StreamText } from "./run-tables.tsx";

/**
 * A run page's live stream (`/api/runs/:id/events`) applied to its data: a transition patches
 * the run and is appended to the timeline, a step snapshot replaces that step, model output
 * builds the streamed text, and each asks for the parts it may have changed to be fetched again
 * (at once, then at most once more per 250 ms window). Not opened once the stream has ended.
 */

type Ref<T> = { current: T };
type Update<T> = (update: (old: T) => T) => void;

/** What the stream changes on the page. */
export interface RunStreamSink {
  dataRef: Ref<Data>;
  setData: Update<Data>;
  setStreams: Update<ReadonlyMap<number, StreamText>>;
  setLive: (status: LiveStatus) => void;
  setEnded: (ended: boolean) => void;
  fetchParts: (parts: Iterable<Part>) => void;
}

/** The sink and, for one opening of the stream, its refetch window and the streamed texts. */
interface Handlers extends RunStreamSink {
  soon: (parts: Part[]) => void;
  stream: (seq: number, update: (old: StreamText | undefined) => StreamText | undefined) => void;
}

export function useRunStream(id: string, ended: boolean, sink: RunStreamSink): void {
  const { setLive, fetchParts } = sink;
  useEffect(() => {
    if (ended) {
      setLive("final");
      return;
    }
    const refetch = refetchWindow(fetchParts);
    const on: Handlers = {
      ...sink,
      soon: refetch.soon,
      stream: (seq, update) => sink.setStreams((old) => withStream(old, seq, update)),
    };
    const stop = subscribe(`/api/runs/${encodeURIComponent(id)}/events`, {
      onStatus: setLive,
      onReopen: () => fetchParts(PARTS),
      onEvent: (type, event) => {
        if (typeof event.runId === "string" && event.runId !== id) return;
        onRunEvent(type, event, on);
      },
    });
    return () => {
      stop();
      refetch.cancel();
    };
  }, [id, fetchParts, ended]);
}

/** Refetches: at once, then at most one more per 250 ms window for what was asked meanwhile. */
function refetchWindow(fetchParts: (parts: Iterable<Part>) => void) {
  const due = new Set<Part>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const openWindow = () => {
    timer = setTimeout(() => {
      timer = undefined;
      if (due.size === 0) return;
      const parts = [...due];
      due.clear();
      fetchParts(parts);
      openWindow();
    }, 250);
  };
  const soon = (parts: Part[]) => {
    if (timer) {
      for (const p of parts) due.add(p);
      return;
    }
    fetchParts(parts);
    openWindow();
  };
  return { soon, cancel: () => clearTimeout(timer) };
}

function onRunEvent(type: string, event: Record<string, unknown>, on: Handlers): void {
  const seq = typeof event.seq === "number" ? event.seq : null;
  const attempt = typeof event.attempt === "number" ? event.attempt : 0;
  switch (type) {
    case "transition":
      onTransition(event, on);
      break;
    case "step":
      onStep(seq, event, on);
      break;
    case "model.start":
      if (seq !== null) on.stream(seq, () => ({ attempt, text: "", done: false }));
      break;
    case "step.rate_limited":
      if (seq !== null)
        on.stream(seq, (old) => ({
          attempt,
          text: old?.attempt === attempt ? old.text : "",
          done: false,
          slot: slotOf(event),
        }));
      break;
    case "model.text":
      if (seq !== null && typeof event.text === "string") {
        const text = event.text;
        on.stream(seq, (old) =>
          old && old.attempt === attempt
            ? { ...old, text: old.text + text }
            : { attempt, text: (old?.text ?? "") + text, done: false },
        );
      }
      break;
    case "model.retry":
      if (seq !== null) on.stream(seq, () => ({ attempt, text: "", done: false }));
      break;
    case "model.end":
      if (seq !== null) on.stream(seq, (old) => (old ? { ...old, done: true } : old));
      on.soon(["steps"]);
      break;
    case "end":
      // At once, not through `soon`: ending the stream clears its pending refetches.
      on.fetchParts(PARTS);
      on.setEnded(true);
      break;
  }
}

/** The slot wait a `step.rate_limited` event describes. */
function slotOf(event: Record<string, unknown>): SlotWaitEvent {
  const at = typeof event.at === "number" ? event.at : Date.now();
  return {
    kind: String(event.kind ?? "step"),
    name: String(event.name ?? ""),
    rateLimit: String(event.rateLimit ?? ""),
    rule: describeRateLimit({ limit: Number(event.limit), periodMs: Number(event.periodMs) }),
    until: at + Number(event.waitMs ?? 0),
  };
}

function onTransition(event: Record<string, unknown>, on: Handlers): void {
  const tid = typeof event.id === "number" ? event.id : null;
  const known = on.dataRef.current.run?.lastTransitionId ?? -1;
  // A reconnect replays transitions this page has already loaded.
  if (tid !== null && tid <= known) return;
  const to = typeof event.to === "string" ? event.to : typeof event.state === "string" ? event.state : null;
  on.setData((old) => {
    const run =
      old.run && to
        ? {
            ...old.run,
            state: to as RunRecord["state"],
            pausedReason: (event.pausedReason as RunRecord["pausedReason"]) ?? null,
            ...(tid !== null ? { lastTransitionId: tid } : {}),
            ...(typeof event.at === "number" ? { updatedAt: event.at } : {}),
          }
        : old.run;
    const transitions =
      old.transitions && tid !== null && to && !old.transitions.some((t) => t.id === tid)
        ? [...old.transitions, event as unknown as TransitionRecord]
        : old.transitions;
    return { ...old, run, transitions };
  });
  on.soon(PARTS);
}

function onStep(seq: number | null, event: Record<string, unknown>, on: Handlers): void {
  if (seq !== null && Array.isArray(event.attempts) && typeof event.status === "string") {
    // A snapshot of the step: it replaces what the page has for that seq.
    const step = event as unknown as StepRecord;
    if (!on.dataRef.current.steps) on.soon(["steps"]);
    on.setData((old) => {
      if (!old.steps) return old;
      const others = old.steps.filter((x) => x.seq !== step.seq);
      return { ...old, steps: [...others, step].sort((a, b) => a.seq - b.seq) };
    });
    if (step.effect || step.kind === "wait" || step.kind === "child") on.soon(["effects", "waits"]);
  } else {
    on.soon(["steps", "effects", "waits"]);
  }
}

/** The streamed texts with the one of `seq` updated (removed when the update gives none). */
function withStream(
  old: ReadonlyMap<number, StreamText>,
  seq: number,
  update: (old: StreamText | undefined) => StreamText | undefined,
): ReadonlyMap<number, StreamText> {
  const next = new Map(old);
  const value = update(old.get(seq));
  if (value) next.set(seq, value);
  else next.delete(seq);
  return next;
}
