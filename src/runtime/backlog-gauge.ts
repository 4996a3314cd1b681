import type { RuntimeBackend } from "../backend/backend.ts";
import { observeBacklog } from "../core/telemetry/metrics.ts";

/** How old a backlog reading the gauge reports may be: the backend is read at most this often. */
const BACKLOG_EVERY_MS = 5000;

/**
 * Feeds the `cairn.runs.backlog` gauge from `backend` (its `countRuns`): a collection reports the
 * last reading and, when that is older than five seconds, starts a new one in the background, so
 * a metric export never waits on the database nor reads it more than every five seconds. Returns
 * the gauge's removal (at shutdown); nothing when the backend cannot count.
 */
export function watchBacklog(backend: RuntimeBackend): () => void {
  if (!backend.countRuns) return () => {};
  let value: number | undefined;
  let readAt = Number.NEGATIVE_INFINITY;
  let reading = false;
  return observeBacklog(() => {
    const now = Date.now();
    if (!reading && now - readAt >= BACKLOG_EVERY_MS) {
      reading = true;
      readAt = now;
      void backend
        .countRuns?.(now)
        .then((counts) => {
          value = counts.backlog;
        })
        .catch(() => {})
        .finally(() => {
          reading = false;
        });
    }
    return value;
  });
}
