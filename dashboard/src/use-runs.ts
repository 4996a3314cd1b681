import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { RunRecord } from "../../src/api/http-api.ts";
import { api, type LiveStatus, listRuns, type RunFilter, subscribe } from "./api.ts";
import { matches } from "./runs-filter.ts";

/**
 * The runs table's data: the first page for the filter, "load more", and live updates from the
 * all-runs stream (a shown row is patched at once from the event, then the run is refetched,
 * batched; a run not shown is fetched only if it belongs in the table as filtered).
 */

type SetRuns = (update: (old: RunRecord[] | null) => RunRecord[] | null) => void;
type Ref<T> = { current: T };

export function useRuns(filter: RunFilter) {
  const [runs, setRuns] = useState<RunRecord[] | null>(null);
  const [cursor, setCursor] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<string | null>(null);
  const [moreError, setMoreError] = useState<string | null>(null);
  const [loadingMore, setLoadingMore] = useState(false);
  const generation = useRef(0);
  const filterRef = useRef(filter);
  filterRef.current = filter;
  const runsRef = useRef(runs);
  runsRef.current = runs;

  const loadFirst = useCallback(() => {
    const mine = ++generation.current;
    setLoading(true);
    listRuns(filterRef.current).then(
      (page) => {
        if (mine !== generation.current) return;
        setRuns(page.runs);
        setCursor(page.nextCursor);
        setError(null);
        setLoading(false);
      },
      (e: Error) => {
        if (mine !== generation.current) return;
        setError(e.message);
        setRuns((old) => old ?? []);
        setLoading(false);
      },
    );
  }, []);

  useEffect(() => {
    setMoreError(null);
    loadFirst();
  }, [filter, loadFirst]);

  const { live, flash } = useLiveRuns(runsRef, filterRef, setRuns, loadFirst);

  const loadMore = () => {
    if (!cursor) return;
    const mine = generation.current;
    setLoadingMore(true);
    setMoreError(null);
    listRuns(filter, cursor).then(
      (page) => {
        if (mine !== generation.current) return;
        setRuns((old) => {
          const seen = new Set((old ?? []).map((r) => r.id));
          return [...(old ?? []), ...page.runs.filter((r) => !seen.has(r.id))];
        });
        setCursor(page.nextCursor);
        setLoadingMore(false);
      },
      (e: Error) => {
        setMoreError(e.message);
        setLoadingMore(false);
      },
    );
  };

  return { runs, cursor, loading, error, moreError, loadingMore, live, flash, loadMore };
}

/** Live updates: patch the row at once from the event, then refetch the run (batched). */
function useLiveRuns(
  runsRef: Ref<RunRecord[] | null>,
  filterRef: Ref<RunFilter>,
  setRuns: SetRuns,
  loadFirst: () => void,
) {
  const [live, setLive] = useState<LiveStatus>("connecting");
  const [flash, setFlash] = useState<ReadonlySet<string>>(new Set());
  useEffect(() => {
    const pending = new Set<string>();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const flushSoon = () => {
      if (timer) return;
      timer = setTimeout(flush, 300);
    };
    const flush = () => {
      timer = undefined;
      const ids = [...pending];
      pending.clear();
      for (const id of ids) {
        api.run(id).then(
          ({ run }) => {
            setRuns((old) => placed(old, run, filterRef.current));
            flashRow(setFlash, run.id);
          },
          () => {},
        );
      }
    };
    const stop = subscribe("/api/events", {
      onStatus: setLive,
      onReopen: loadFirst,
      onEvent: (type, data) => {
        const runId = typeof data.runId === "string" ? data.runId : null;
        if (!runId) return;
        if (type !== "transition") return;
        if (!applyTransition(runId, data, runsRef.current, filterRef.current, setRuns)) return;
        pending.add(runId);
        flushSoon();
      },
    });
    return () => {
      stop();
      clearTimeout(timer);
    };
  }, [loadFirst]);
  return { live, flash };
}

/**
 * Patches the shown row of `runId` from a transition event; false when the event needs nothing
 * more (a transition the row already has, or a run not shown that does not belong in the table),
 * true when the run is to be fetched.
 */
function applyTransition(
  runId: string,
  data: Record<string, unknown>,
  shown: RunRecord[] | null,
  f: RunFilter,
  setRuns: SetRuns,
): boolean {
  const tid = typeof data.id === "number" ? data.id : null;
  const to = typeof data.to === "string" ? data.to : typeof data.state === "string" ? data.state : null;
  const pausedReason = (data.pausedReason as RunRecord["pausedReason"]) ?? null;
  const row = shown?.find((r) => r.id === runId);
  if (row) {
    if (tid !== null && tid <= row.lastTransitionId) return false;
    if (to) {
      setRuns((old) =>
        (old ?? []).map((r) =>
          r.id === runId
            ? {
                ...r,
                state: to as RunRecord["state"],
                pausedReason,
                ...(tid !== null ? { lastTransitionId: tid } : {}),
                updatedAt: typeof data.at === "number" ? data.at : Date.now(),
              }
            : r,
        ),
      );
    }
  } else if (typeof data.agent === "string" && typeof data.workflow === "string" && to) {
    // A run not shown: fetched only if it belongs in the table as filtered.
    if (f.agent && f.agent !== data.agent) return false;
    if (f.workflow && f.workflow !== data.workflow) return false;
    if (f.state?.length && !f.state.includes(to)) return false;
    if (f.pausedReason && f.pausedReason !== pausedReason) return false;
  }
  return true;
}

/** The table with `run` fetched anew: its row replaced, or added on top when it belongs there. */
function placed(old: RunRecord[] | null, run: RunRecord, filter: RunFilter): RunRecord[] | null {
  if (!old) return old;
  const at = old.findIndex((r) => r.id === run.id);
  if (at >= 0) return old.map((r) => (r.id === run.id ? run : r));
  if (!matches(run, filter)) return old;
  return [run, ...old];
}

/** Flashes the row of `id` for 1.2 s. */
function flashRow(setFlash: (update: (old: ReadonlySet<string>) => ReadonlySet<string>) => void, id: string): void {
  setFlash((old) => new Set(old).add(id));
  setTimeout(
    () =>
      setFlash((old) => {
        const next = new Set(old);
        next.delete(id);
        return next;
      }),
    1200,
  );
}
