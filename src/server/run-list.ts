import type { RunPage } from "../api/responses.ts";
import type { RunFilter } from "../backend/backend.ts";
import { InvalidInputError } from "../core/errors.ts";
import type { RunRecord } from "../core/records.ts";
import { isRunState, type PausedReason, type RunState } from "../core/run-state.ts";
import type { Runtime } from "../runtime/runtime.ts";

/**
 * `GET /api/runs`: pages of runs, newest first, over what `RunFilter` offers (agent, workflow,
 * states; ordered by creation, newest first, with offsets). The other filters — paused reason,
 * idempotency key, creation time — are applied here while scanning.
 *
 * The cursor is keyset-like although the backend pages by offset: it holds the (createdAt, id) of
 * the last run looked at and the offset after it. Runs are never deleted, but they enter and
 * leave a state filter, so offsets drift; the next page starts from a position at or before the
 * cursor's run (stepping back until the run found there is not older than it) and skips what is
 * not older. So no run is returned twice and none that matches is skipped, whatever changed
 * between pages. A page scans at most `scanLimit` runs: a very selective filter may return a
 * short (even empty) page with a `nextCursor` — follow it until it is null.
 */

/** What the list takes, validated. */
export interface RunListQuery {
  agent?: string | undefined;
  workflow?: string | undefined;
  /** Comma-separated states. */
  state?: string | undefined;
  pausedReason?: PausedReason | undefined;
  /** Only runs started with this idempotency key (any agent or workflow). */
  key?: string | undefined;
  since?: number | undefined;
  until?: number | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

interface Cursor {
  /** Offset (in the backend's ordering) just after the last run looked at. */
  o: number;
  /** createdAt and id of the last run looked at. */
  c: number;
  i: string;
}

/** Default page size. */
export const DEFAULT_PAGE = 50;
const CHUNK = 200;

/** One page of runs for the query. */
export async function listRunPage(
  runtime: Runtime,
  query: RunListQuery,
  options: { scanLimit?: number } = {},
): Promise<RunPage> {
  const limit = query.limit ?? DEFAULT_PAGE;
  const scanLimit = Math.max(options.scanLimit ?? 5000, limit);
  let states = parseStates(query.state);
  if (query.pausedReason !== undefined) {
    if (states !== undefined && !states.includes("PAUSED")) return { runs: [], nextCursor: null };
    states = ["PAUSED"];
  }
  const filter: RunFilter = {
    ...(query.agent !== undefined && { agent: query.agent }),
    ...(query.workflow !== undefined && { workflow: query.workflow }),
    ...(states !== undefined && { state: states }),
  };
  const cursor = query.cursor === undefined ? undefined : decodeCursor(query.cursor);
  let offset = cursor ? await startOffset(runtime, filter, cursor) : 0;
  const runs: RunRecord[] = [];
  let scanned = 0;
  let last: { c: number; i: string } | undefined = cursor && { c: cursor.c, i: cursor.i };
  for (;;) {
    const page = await runtime.listRuns({ ...filter, limit: CHUNK, offset });
    for (const run of page) {
      offset += 1;
      scanned += 1;
      if (cursor && !olderThan(run, cursor)) continue;
      last = { c: run.createdAt, i: run.id };
      if (query.since !== undefined && run.createdAt < query.since) return { runs, nextCursor: null };
      const matches =
        (query.until === undefined || run.createdAt <= query.until) &&
        (query.pausedReason === undefined || run.pausedReason === query.pausedReason) &&
        (query.key === undefined || run.key === query.key);
      if (matches) runs.push(run);
      if (runs.length === limit || scanned >= scanLimit) {
        return { runs, nextCursor: encodeCursor({ o: offset, ...last }) };
      }
    }
    if (page.length < CHUNK) return { runs, nextCursor: null };
  }
}

/** The states of `a,b,c`, or undefined for none; a name that is not a state is refused. */
function parseStates(text: string | undefined): RunState[] | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const names = text.split(",").map((s) => s.trim().toUpperCase());
  const bad = names.filter((s) => !isRunState(s));
  if (bad.length > 0) {
    throw new InvalidInputError(`unknown run state ${bad.map((b) => JSON.stringify(b)).join(", ")} in state=${text}`, [
      { path: ["state"], message: "unknown run state" },
    ]);
  }
  return names as RunState[];
}

/** Whether `run` comes after the cursor's run in the newest-first order. */
function olderThan(run: RunRecord, cursor: { c: number; i: string }): boolean {
  return run.createdAt < cursor.c || (run.createdAt === cursor.c && run.id < cursor.i);
}

/** A position at or before the cursor's run in today's order (see the file comment). */
async function startOffset(runtime: Runtime, filter: RunFilter, cursor: Cursor): Promise<number> {
  for (let back = CHUNK; ; back *= 4) {
    const at = Math.max(0, cursor.o - back);
    if (at === 0) return 0;
    const [run] = await runtime.listRuns({ ...filter, limit: 1, offset: at });
    if (run !== undefined && !olderThan(run, cursor)) return at;
  }
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor), "utf8").toString("base64url");
}

function decodeCursor(text: string): Cursor {
  try {
    const value = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as Partial<Cursor>;
    if (
      Number.isSafeInteger(value.o) &&
      (value.o as number) >= 0 &&
      Number.isFinite(value.c) &&
      typeof value.i === "string"
    ) {
      return value as Cursor;
    }
  } catch {
    // Refused below.
  }
  throw new InvalidInputError(`cursor ${JSON.stringify(text)} is not one this server gave; pass a page's nextCursor`, [
    { path: ["cursor"], message: "not a cursor" },
  ]);
}
