import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { isSettled, type RunState } from "../../src/api/http-api.ts";
import { ApiError, type LiveStatus } from "./api.ts";
import { type Data, EMPTY, fetchers, PARTS, type Part } from "./run-parts.ts";
import { useRunStream } from "./run-stream.ts";
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
const FINAL: ReadonlySet<string> = new Set(["COMPLETED", "FAILED", "BLOCKED", "CANCELLED", "COMPENSATED", "MOVED"]);

export function useRunData(id: string) {
  const { data, setData, errors, notFound, streams, setStreams, fetchParts, refresh } = useRunParts(id);
  const [live, setLive] = useState<LiveStatus>("connecting");
  // The live stream. The server ends it (`end`) when the run settles; it is opened again when the
  // run is seen open again (after a resume or a reconcile, or a worker's recovery of an
  // INTERRUPTED run, looked for every few seconds while such a run is settled).
  const dataRef = useRef(data);
  dataRef.current = data;
  const [ended, setEnded] = useStreamEnd(data.run?.state ?? null, fetchParts);
  useRunStream(id, ended, { dataRef, setData, setStreams, setLive, setEnded, fetchParts });
  return { data, errors, notFound, streams, live, refresh };
}

/** The parts of the run, fetched anew on demand; stale answers are dropped. */
function useRunParts(id: string) {
  const [data, setData] = useState<Data>(EMPTY);
  const [errors, setErrors] = useState<Partial<Record<Part, string>>>({});
  const [notFound, setNotFound] = useState(false);
  const [streams, setStreams] = useState<ReadonlyMap<number, StreamText>>(new Map());
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

  return { data, setData, errors, notFound, streams, setStreams, fetchParts, refresh };
}

/**
 * Whether the run's stream has ended: set by its `end`, cleared (with everything refetched) once
 * the run is seen open again; while a run whose state is not final is settled, it is looked at
 * every 5 s.
 */
function useStreamEnd(
  state: RunState | null,
  fetchParts: (parts: Iterable<Part>) => void,
): [boolean, (ended: boolean) => void] {
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
  return [ended, setEnded];
}
