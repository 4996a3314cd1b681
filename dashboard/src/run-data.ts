import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import {
  isSettled,
  type RunRecord,
  type StepRecord,
  type TransitionRecord,
  type WaitRecord,
} from "../../src/api/http-api.ts";
import { ApiError, api, type EffectEntry, type LiveStatus, subscribe } from "./api.ts";
import type { StreamText } from "./run-tables.tsx";

/**
 * The data of a run page: the run, its transitions, steps, effects and waits, fetched part by part
 * and kept current by the run's live stream (with the text its model calls stream).
 */

/**
 * Settled states in which a run stays until someone acts (the page refetches after its own acts).
 * The other settled ones (INTERRUPTED, which a worker may recover, and NEEDS_RECONCILIATION) are
 * looked at every few seconds once their stream has ended.
 */
const FINAL: ReadonlySet<string> = new Set(["COMPLETED", "FAILED", "BLOCKED", "CANCELLED", "COMPENSATED"]);

type Part = "run" | "transitions" | "steps" | "effects" | "waits";
const PARTS: Part[] = ["run", "transitions", "steps", "effects", "waits"];

interface Data {
  run: RunRecord | null;
  transitions: TransitionRecord[] | null;
  steps: StepRecord[] | null;
  effects: EffectEntry[] | null;
  waits: WaitRecord[] | null;
}

const EMPTY: Data = { run: null, transitions: null, steps: null, effects: null, waits: null };

const fetchers: { [K in Part]: (id: string) => Promise<Data[K]> } = {
  run: (id) => api.run(id).then((r) => r.run),
  transitions: (id) => api.transitions(id).then((r) => r.transitions),
  steps: (id) => api.steps(id).then((r) => r.steps),
  effects: (id) => api.effects(id).then((r) => r.effects),
  waits: (id) => api.waits(id).then((r) => r.waits),
};

export function useRunData(id: string) {
  const [data, setData] = useState<Data>(EMPTY);
  const [errors, setErrors] = useState<Partial<Record<Part, string>>>({});
  const [notFound, setNotFound] = useState(false);
  const [streams, setStreams] = useState<ReadonlyMap<number, StreamText>>(new Map());
  const [live, setLive] = useState<LiveStatus>("connecting");
  // Per part: the number of the latest request, and of the latest applied (stale answers are dropped).
  const asked = useRef<Record<Part, number>>({ run: 0, transitions: 0, steps: 0, effects: 0, waits: 0 });
  const applied = useRef<Record<Part, number>>({ run: 0, transitions: 0, steps: 0, effects: 0, waits: 0 });

  const fetchParts = useCallback(
    (parts: Iterable<Part>) => {
      for (const part of parts) {
        const mine = ++asked.current[part];
        fetchers[part](id).then(
          (value) => {
            if (mine < applied.current[part]) return;
            applied.current[part] = mine;
            setData((old) => ({ ...old, [part]: value }));
            setErrors((old) => (old[part] ? { ...old, [part]: undefined } : old));
          },
          (error: Error) => {
            if (part === "run" && error instanceof ApiError && error.status === 404) setNotFound(true);
            setErrors((old) => ({ ...old, [part]: error.message }));
          },
        );
      }
    },
    [id],
  );

  const refresh = useCallback(() => fetchParts(PARTS), [fetchParts]);

  useEffect(() => {
    setData(EMPTY);
    setErrors({});
    setNotFound(false);
    setStreams(new Map());
    fetchParts(PARTS);
  }, [fetchParts]);

  // The live stream. The server ends it (`end`) when the run settles; it is opened again when the
  // run is seen open again (after a resume or a reconcile, or a worker's recovery of an
  // INTERRUPTED run, looked for every few seconds while such a run is settled).
  const dataRef = useRef(data);
  dataRef.current = data;
  const state = data.run?.state ?? null;
  const open = state === null || !isSettled(state);
  const [ended, setEnded] = useState(false);
  useEffect(() => {
    if (open && ended) {
      setEnded(false);
      fetchParts(PARTS);
    }
  }, [open, ended, fetchParts]);
  const final = state !== null && FINAL.has(state);
  useEffect(() => {
    if (!ended || final) return;
    const timer = setInterval(() => fetchParts(["run"]), 5000);
    return () => clearInterval(timer);
  }, [ended, final, fetchParts]);

  useEffect(() => {
    if (ended) {
      setLive("final");
      return;
    }
    // Refetches: at once, then at most one more per 250 ms window for what was asked meanwhile.
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
    const stream = (seq: number, update: (old: StreamText | undefined) => StreamText | undefined) =>
      setStreams((old) => {
        const next = new Map(old);
        const value = update(old.get(seq));
        if (value) next.set(seq, value);
        else next.delete(seq);
        return next;
      });
    const stop = subscribe(`/api/runs/${encodeURIComponent(id)}/events`, {
      onStatus: setLive,
      onReopen: () => fetchParts(PARTS),
      onEvent: (type, event) => {
        if (typeof event.runId === "string" && event.runId !== id) return;
        const seq = typeof event.seq === "number" ? event.seq : null;
        const attempt = typeof event.attempt === "number" ? event.attempt : 0;
        switch (type) {
          case "transition": {
            const tid = typeof event.id === "number" ? event.id : null;
            const known = dataRef.current.run?.lastTransitionId ?? -1;
            // A reconnect replays transitions this page has already loaded.
            if (tid !== null && tid <= known) break;
            const to = typeof event.to === "string" ? event.to : typeof event.state === "string" ? event.state : null;
            setData((old) => {
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
            soon(PARTS);
            break;
          }
          case "step": {
            if (seq !== null && Array.isArray(event.attempts) && typeof event.status === "string") {
              // A snapshot of the step: it replaces what the page has for that seq.
              const step = event as unknown as StepRecord;
              if (!dataRef.current.steps) soon(["steps"]);
              setData((old) => {
                if (!old.steps) return old;
                const others = old.steps.filter((x) => x.seq !== step.seq);
                return { ...old, steps: [...others, step].sort((a, b) => a.seq - b.seq) };
              });
              if (step.effect || step.kind === "wait" || step.kind === "child") soon(["effects", "waits"]);
            } else {
              soon(["steps", "effects", "waits"]);
            }
            break;
          }
          case "model.start":
            if (seq !== null) stream(seq, () => ({ attempt, text: "", done: false }));
            break;
          case "model.text":
            if (seq !== null && typeof event.text === "string") {
              const text = event.text;
              stream(seq, (old) =>
                old && old.attempt === attempt
                  ? { ...old, text: old.text + text }
                  : { attempt, text: (old?.text ?? "") + text, done: false },
              );
            }
            break;
          case "model.retry":
            if (seq !== null) stream(seq, () => ({ attempt, text: "", done: false }));
            break;
          case "model.end":
            if (seq !== null) stream(seq, (old) => (old ? { ...old, done: true } : old));
            soon(["steps"]);
            break;
          case "end":
            // At once, not through `soon`: ending the stream clears its pending refetches.
            fetchParts(PARTS);
            setEnded(true);
            break;
        }
      },
    });
    return () => {
      stop();
      clearTimeout(timer);
    };
  }, [id, fetchParts, ended]);

  return { data, errors, notFound, streams, live, refresh };
}
